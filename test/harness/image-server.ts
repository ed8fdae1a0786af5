// A real HTTP server on 127.0.0.1, port 0, serving test images with programmable behaviour:
// a status instead of the image, HEAD refused with 405, no Content-Length (chunked), a pause
// per chunk, and a stall after N bytes until the test says go (or the client leaves). It
// counts requests per path and the body bytes handed to the socket, with back-pressure, so
// `bytesSent` runs at most a socket buffer ahead of what the client read.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { open, stat } from 'node:fs/promises';

export interface ImageRoute {
  /** The image: bytes in memory, or a file read as it is sent. */
  readonly data?: Buffer;
  readonly file?: string;
  /** Answer GET and HEAD with this status and a short text body instead of the image. */
  readonly status?: number;
  /** HEAD gets 405 Method Not Allowed. */
  readonly refuseHead?: boolean;
  /** Send no Content-Length: the body goes out chunked. */
  readonly omitLength?: boolean;
  /** Bytes per write; default 256 KiB. */
  readonly chunkBytes?: number;
  /** Pause after each write (throttling). */
  readonly chunkDelayMs?: number;
  /**
   * After `afterBytes` of the body, wait for `until()` before sending more. When it has not
   * resolved after `timeoutMs` (default 15 s), the connection is destroyed, so a client that
   * waits for the whole body before doing anything fails instead of hanging.
   */
  readonly stall?: {
    readonly afterBytes: number;
    readonly until: () => Promise<void>;
    readonly timeoutMs?: number;
  };
}

export interface RouteStats {
  gets: number;
  heads: number;
  /** Body bytes written to sockets, all requests together. */
  bytesSent: number;
  /** Bodies sent whole. */
  completed: number;
  /** Responses the client closed before their end. */
  closedEarly: number;
  /** Stalls that reached their `until`, and those that timed out. */
  stallsReleased: number;
  stallsTimedOut: number;
  /** The last Authorization header seen. */
  authorization: string | undefined;
}

export interface ImageServer {
  readonly origin: string;
  /** `http://[credentials@]127.0.0.1:PORT<path>`. */
  url(path: string, credentials?: string): string;
  serve(path: string, route: ImageRoute): void;
  stats(path: string): RouteStats;
  close(): Promise<void>;
}

const DEFAULT_CHUNK = 256 * 1024;
const DEFAULT_STALL_TIMEOUT_MS = 15_000;

export async function startImageServer(): Promise<ImageServer> {
  const routes = new Map<string, ImageRoute>();
  const stats = new Map<string, RouteStats>();
  const statsOf = (path: string): RouteStats => {
    let s = stats.get(path);
    if (s === undefined) {
      s = {
        gets: 0,
        heads: 0,
        bytesSent: 0,
        completed: 0,
        closedEarly: 0,
        stallsReleased: 0,
        stallsTimedOut: 0,
        authorization: undefined,
      };
      stats.set(path, s);
    }
    return s;
  };

  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const route = routes.get(path);
    const s = statsOf(path);
    s.authorization = req.headers.authorization;
    if (req.method === 'HEAD') s.heads++;
    else s.gets++;
    handle(req, res, route, s).catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject).listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  return {
    origin,
    url: (path, credentials) =>
      credentials === undefined
        ? `${origin}${path}`
        : `http://${credentials}@127.0.0.1:${port}${path}`,
    serve: (path, route) => {
      routes.set(path, route);
    },
    stats: statsOf,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function handle(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  route: ImageRoute | undefined,
  s: RouteStats,
): Promise<void> {
  if (route === undefined || route.status !== undefined) {
    const status = route?.status ?? 404;
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(req.method === 'HEAD' ? undefined : `status ${status}\n`);
    return;
  }
  if (req.method === 'HEAD' && route.refuseHead === true) {
    res.writeHead(405, { allow: 'GET', 'content-type': 'text/plain' });
    res.end();
    return;
  }
  const size = route.data?.length ?? (route.file === undefined ? 0 : (await stat(route.file)).size);
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/octet-stream' };
  if (route.omitLength !== true) headers['content-length'] = String(size);
  res.writeHead(200, headers);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  let closed = false;
  res.once('close', () => (closed = true));
  const file = route.file === undefined ? undefined : await open(route.file);
  try {
    const chunk = route.chunkBytes ?? DEFAULT_CHUNK;
    let offset = 0;
    let stalled = false;
    while (offset < size && !closed) {
      const stall = route.stall;
      if (stall !== undefined && !stalled && offset >= stall.afterBytes) {
        stalled = true;
        const outcome = await stallUntil(res, stall.until(), stall.timeoutMs);
        if (outcome === 'released') s.stallsReleased++;
        if (outcome === 'timeout') {
          s.stallsTimedOut++;
          res.destroy();
          break;
        }
        if (outcome === 'closed') break;
      }
      const limit = stall !== undefined && !stalled ? stall.afterBytes : size;
      const n = Math.min(chunk, size - offset, Math.max(1, limit - offset));
      const bytes = route.data?.subarray(offset, offset + n) ?? Buffer.alloc(n);
      if (file !== undefined) await file.read(bytes, 0, n, offset);
      offset += n;
      s.bytesSent += n;
      if (!res.write(bytes)) await drained(res);
      if (route.chunkDelayMs !== undefined) await sleep(route.chunkDelayMs);
    }
    if (!closed && !res.destroyed) {
      res.end();
      s.completed++;
    } else if (offset < size) s.closedEarly++;
  } finally {
    await file?.close();
  }
}

type StallOutcome = 'released' | 'timeout' | 'closed';

function stallUntil(
  res: http.ServerResponse,
  until: Promise<void>,
  timeoutMs = DEFAULT_STALL_TIMEOUT_MS,
): Promise<StallOutcome> {
  return new Promise<StallOutcome>((resolve) => {
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    const onClose = (): void => finish('closed');
    function finish(outcome: StallOutcome): void {
      clearTimeout(timer);
      res.off('close', onClose);
      resolve(outcome);
    }
    res.once('close', onClose);
    until.then(
      () => finish('released'),
      () => finish('timeout'),
    );
  });
}

function drained(res: http.ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
