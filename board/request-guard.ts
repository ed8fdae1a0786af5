// What a browser can be made to send the board from someone else's page. The board without
// credentials listens on loopback, and loopback is no barrier to a page the operator visits:
// the page can rebind its own name to 127.0.0.1 (DNS rebinding) and then read and write the
// API as same-origin. Two checks close that: the Host header must name the board (a rebound
// page still sends its own name), and a write must come from the board's own origin.
import { isIP } from 'node:net';
import type { RequestHandler } from 'express';

/** Methods a browser sends without a preflight that change nothing here. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The hostname of a Host header (`name`, `name:port`, `[v6]:port`), lowercased, no dot at the end. */
export function hostnameOf(host: string): string | undefined {
  const match = /^(?:\[([0-9a-f:.]+)\]|([^:[\]]+))(?::\d{1,5})?$/i.exec(host.trim());
  const name = match?.[1] ?? match?.[2];
  return name?.toLowerCase().replace(/\.$/, '');
}

/**
 * Whether a request naming `hostname` is for this board. An IP literal cannot be rebound, and
 * `localhost` resolves to loopback without DNS (RFC 6761); any other name must be one the
 * operator listed, exactly or, for an entry starting with a dot, as a subdomain.
 */
export function hostAllowed(hostname: string, allowed: readonly string[]): boolean {
  if (isIP(hostname) !== 0) return true;
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) return true;
  return allowed.some((entry) =>
    entry.startsWith('.')
      ? hostname.endsWith(entry) || hostname === entry.slice(1)
      : hostname === entry,
  );
}

/**
 * Whether a write came from the board's own page. `Sec-Fetch-Site` is sent by every current
 * browser and says so directly; `Origin` covers the others. A request with neither is not from
 * a browser's page (curl, a script), which can send any header it likes anyway.
 */
function sameOrigin(headers: Record<string, string | string[] | undefined>, host: string): boolean {
  const site = headers['sec-fetch-site'];
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return false;
  const origin = headers.origin;
  if (typeof origin !== 'string') return true;
  if (origin === 'null') return false;
  try {
    return new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}

function refuse(res: Parameters<RequestHandler>[1], message: string): void {
  res.status(403).type('text/plain').send(`${message}\n`);
}

/** Refuses requests for another host name, and writes from another origin, before anything else runs. */
export function requestGuard(options: {
  readonly allowedHosts: readonly string[];
}): RequestHandler {
  return (req, res, next) => {
    const host = req.headers.host ?? '';
    const hostname = hostnameOf(host);
    if (hostname === undefined || !hostAllowed(hostname, options.allowedHosts)) {
      refuse(
        res,
        'this board does not answer to that Host name (board.allowedHosts lists the names it does)',
      );
      return;
    }
    if (!SAFE_METHODS.has(req.method) && !sameOrigin(req.headers, host)) {
      refuse(res, 'cross-origin writes are refused');
      return;
    }
    next();
  };
}
