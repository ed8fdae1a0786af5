// Image downloads over HTTP(S) (SPEC §5): the GET that feeds a fill, and the size probe of the
// pool-space precheck (HEAD, falling back to a GET's headers when HEAD is refused). A `file:`
// image is read from the local file instead (local-file.ts), through the same two calls. Errors carry
// a code and the classification table's kind, and name the image and the URL's host only: a
// URL's userinfo or query string may hold a token. Redirects are followed here, one hop at a
// time, under the policy of redirects.ts; fetch's own following would go anywhere.
import dns from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { fileURLToPath } from 'node:url';
import { EnvHttpProxyAgent, fetch, type Dispatcher, type Response } from 'undici';
import { classifyError, httpStatusKind } from '../../errors/classify.js';
import type { ErrorKind } from '../../errors/kind.js';
import type { ImageConfig } from '../config/schema.js';
import { Kvm2Error, type Kvm2ErrorCode } from '../../errors/error.js';
import { localImageSize, openLocalImage } from './local-file.js';
import {
  addressRefusal,
  AddressRefusedError,
  checkedLookup,
  hopRefusal,
  isInternalServer,
  literalAddress,
  REDIRECT_POLICY,
} from './redirects.js';

/** Timeouts per phase (undici's), and the caps of a whole fill and of a size probe. */
export const DOWNLOAD_TIMEOUTS = Object.freeze({
  connectMs: 30_000,
  headersMs: 60_000,
  /** The longest silence between two chunks of a body. */
  bodyIdleMs: 120_000,
  /** A whole fill, from the GET to the marker (SPEC §5). */
  fillMs: 20 * 60_000,
  probeMs: 60_000,
});

let dispatcher: Dispatcher | undefined;
/** For hops a redirect chose, by whether the server that redirected is internal. */
const redirectDispatchers = new Map<boolean, Dispatcher>();

// HTTP_PROXY / HTTPS_PROXY / NO_PROXY are honoured: image servers often sit behind a proxy.
function newDispatcher(lookup?: LookupFunction): Dispatcher {
  return new EnvHttpProxyAgent({
    connect: { timeout: DOWNLOAD_TIMEOUTS.connectMs, ...(lookup === undefined ? {} : { lookup }) },
    headersTimeout: DOWNLOAD_TIMEOUTS.headersMs,
    bodyTimeout: DOWNLOAD_TIMEOUTS.bodyIdleMs,
  });
}

function imageDispatcher(): Dispatcher {
  dispatcher ??= newDispatcher();
  return dispatcher;
}

/** Its direct connections check the addresses they resolve again (a proxy resolves its own). */
function redirectDispatcher(fromInternal: boolean): Dispatcher {
  let found = redirectDispatchers.get(fromInternal);
  if (found === undefined) {
    found = newDispatcher(checkedLookup(fromInternal));
    redirectDispatchers.set(fromInternal, found);
  }
  return found;
}

/** Where an image comes from, with credentials moved out of the URL into a header. */
export interface ImageSource {
  readonly imageName: string;
  /** The URL without userinfo; never put in a message (its query may be a signature). */
  readonly url: URL;
  /** `host[:port]`, or a local file's path: what messages, logs and spans name. */
  readonly where: string;
  readonly authorization: string | undefined;
  /** A local file's path (`file:` URLs, local-file.ts); undefined for HTTP(S). */
  readonly file: string | undefined;
}

/**
 * The source of a configured image. `user:password@` in the URL becomes a Basic Authorization
 * header, as curl does (fetch refuses URLs with credentials, and messages must never show them).
 */
export function imageSource(imageName: string, image: ImageConfig): ImageSource {
  const url = new URL(image.url);
  if (url.protocol === 'file:') {
    const file = fileURLToPath(url);
    return { imageName, url, where: file, authorization: undefined, file };
  }
  let authorization: string | undefined;
  if (url.username !== '' || url.password !== '') {
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  return { imageName, url, where: url.host, authorization, file: undefined };
}

export interface ImageResponse {
  /** Content-Length, when the server sent one and the body is not content-encoded. */
  readonly length: number | undefined;
  /** The body as it arrives; read it once. Failures are ProviderErrors. */
  readonly body: AsyncIterable<Uint8Array>;
  /** Ends the request, unread body and all. Idempotent. */
  readonly cancel: () => void;
}

/** GET the image; resolves when the headers are in and say 2xx with a body. */
export async function openImage(
  src: ImageSource,
  options: { signal: AbortSignal },
): Promise<ImageResponse> {
  if (src.file !== undefined) return openLocalImage(src.imageName, src.file, options);
  const local = new AbortController();
  const signal = AbortSignal.any([options.signal, local.signal]);
  const cancel = (): void => local.abort(new Error('image request ended by kvm2'));
  let sent: Sent;
  try {
    sent = await send(src, 'GET', signal);
  } catch (err) {
    throw networkError(src, err, options.signal);
  }
  const { response, from } = sent;
  try {
    if (!response.ok) throw statusError(from, response);
    const length = contentLength(response);
    if (length === 0) throw emptyError(from);
    return { length, body: bodyChunks(from, response, options.signal), cancel };
  } catch (err) {
    cancel();
    throw err;
  }
}

/**
 * The image's size in bytes from HEAD; when HEAD is refused (405, 501, an S3 URL signed for GET
 * only answers 403) or says no size, from a GET's headers, the body left unread. Undefined when
 * neither says.
 */
export async function probeImageSize(
  src: ImageSource,
  options: { signal: AbortSignal },
): Promise<number | undefined> {
  if (src.file !== undefined) return localImageSize(src.imageName, src.file);
  const local = new AbortController();
  try {
    const { response: head, from } = await send(
      src,
      'HEAD',
      AbortSignal.any([options.signal, local.signal]),
    );
    if (head.ok) {
      const length = contentLength(head);
      if (length === 0) throw emptyError(from);
      if (length !== undefined) return length;
    }
  } catch (err) {
    throw networkError(src, err, options.signal);
  } finally {
    local.abort();
  }
  const response = await openImage(src, options);
  response.cancel();
  return response.length;
}

/** A final response, and the source as messages about it name it (after redirects, its host). */
interface Sent {
  readonly response: Response;
  readonly from: ImageSource;
}

/**
 * The request, following redirects by REDIRECT_POLICY (docs/security.md, item 12): each hop's
 * target is checked, its name resolved, before anything is sent to it; Authorization goes only
 * to the configured URL's origin, and once dropped stays dropped, as fetch would.
 */
async function send(src: ImageSource, method: 'GET' | 'HEAD', signal: AbortSignal): Promise<Sent> {
  let url = src.url;
  let authorization = src.authorization;
  let via = imageDispatcher();
  /** The hop that led to `url`, for a refusal at connection time. */
  let hop: { from: URL; count: number } | undefined;
  /** The addresses of `url`'s host, resolved when a redirect from it needs them. */
  let addresses: readonly string[] | undefined;
  for (let count = 1; ; count++) {
    const headers: Record<string, string> = {
      // Identity: the bytes hashed and uploaded are the image itself, and Content-Length its size.
      'accept-encoding': 'identity',
      'user-agent': 'kvm2',
    };
    if (authorization !== undefined) headers.authorization = authorization;
    let response: Response;
    try {
      response = await fetch(url, { method, headers, signal, dispatcher: via, redirect: 'manual' });
    } catch (err) {
      const refused = addressRefused(err);
      if (refused === undefined || hop === undefined) throw err;
      throw redirectRefused(src, hop.from, url, hop.count, refused.reason);
    }
    const location = response.headers.get('location');
    const from =
      url === src.url ? src : { ...src, where: `${url.host} (redirected from ${src.where})` };
    if (location === null || !REDIRECT_POLICY.statuses.includes(response.status)) {
      return { response, from };
    }
    void response.body?.cancel().catch(() => undefined);
    let to: URL;
    try {
      to = new URL(location, url);
    } catch {
      throw redirectRefused(src, url, undefined, count, 'its Location is not a URL');
    }
    const refusal = hopRefusal({ from: url, to, count });
    if (refusal !== undefined) throw redirectRefused(src, url, to, count, refusal);
    addresses ??= await addressesOf(url, signal);
    const fromInternal = isInternalServer(addresses);
    const toAddresses = await addressesOf(to, signal);
    const reason = addressRefusal(toAddresses, fromInternal);
    if (reason !== undefined) throw redirectRefused(src, url, to, count, reason);
    if (to.origin !== src.url.origin) authorization = undefined;
    via = redirectDispatcher(fromInternal);
    hop = { from: url, count };
    addresses = toAddresses;
    url = to;
  }
}

/**
 * The addresses of a URL's host: the literal, or what the worker's resolver says. A name it
 * cannot resolve gives none (a proxy may still reach it; a direct connection fails, or is
 * checked as it resolves).
 */
async function addressesOf(url: URL, signal: AbortSignal): Promise<readonly string[]> {
  const literal = literalAddress(url);
  if (literal !== undefined) return [literal];
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const found = await Promise.race([dns.lookup(url.hostname, { all: true }), aborted]);
    return found.map((a) => a.address);
  } catch (err) {
    if (signal.aborted) throw err;
    return [];
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
  }
}

function addressRefused(err: unknown): AddressRefusedError | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    if (e instanceof AddressRefusedError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Permanent: the configuration names a server that redirects where kvm2 does not follow. */
function redirectRefused(
  src: ImageSource,
  from: URL,
  to: URL | undefined,
  count: number,
  reason: string,
): Kvm2Error {
  // Origins only: a Location's userinfo, path and query may hold a token.
  const target = to === undefined ? '' : ` to ${to.protocol}//${to.host}`;
  return new Kvm2Error(
    'ERR_IMAGE_HTTP',
    `image '${src.imageName}': redirect ${count} from ${from.origin}${target} refused: ${reason}`,
    { kind: 'permanent' },
  );
}

function contentLength(response: Response): number | undefined {
  const encoding = response.headers.get('content-encoding');
  // fetch decodes a body the server encoded anyway; its length is then not the image's.
  if (encoding !== null && encoding.toLowerCase() !== 'identity') return undefined;
  const value = response.headers.get('content-length');
  if (value === null || !/^\d+$/.test(value.trim())) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

async function* bodyChunks(
  src: ImageSource,
  response: Response,
  callerSignal: AbortSignal,
): AsyncGenerator<Uint8Array, void, undefined> {
  if (response.body === null) return;
  try {
    for await (const chunk of response.body) yield chunk;
  } catch (err) {
    throw networkError(src, err, callerSignal);
  }
}

function statusError(src: ImageSource, response: Response): Kvm2Error {
  const status = response.status;
  const kind: ErrorKind = httpStatusKind(status) ?? 'permanent';
  const text = response.statusText === '' ? '' : ` ${response.statusText}`;
  return new Kvm2Error(
    'ERR_IMAGE_HTTP',
    `image '${src.imageName}': ${src.where} answered HTTP ${status}${text}`,
    { kind },
  );
}

function emptyError(src: ImageSource): Kvm2Error {
  return new Kvm2Error(
    'ERR_IMAGE_EMPTY',
    `image '${src.imageName}': ${src.where} sent an empty body (Content-Length: 0)`,
  );
}

const IMAGE_VERDICTS: ReadonlySet<string> = new Set<Kvm2ErrorCode>([
  'ERR_IMAGE_HTTP',
  'ERR_IMAGE_FILE',
  'ERR_IMAGE_EMPTY',
  'ERR_IMAGE_DIGEST_MISMATCH',
  'ERR_IMAGE_CONTENT',
]);

/** A failed request or body: cancelled, over its cap, or a network fault, kind by the table. */
export function networkError(src: ImageSource, err: unknown, callerSignal: AbortSignal): Kvm2Error {
  // The image's own verdicts pass as they are; anything else (a libvirt call the signal cut
  // short, a fetch error) is said once, as the download's.
  if (err instanceof Kvm2Error && IMAGE_VERDICTS.has(err.code)) return err;
  const prefix = `image '${src.imageName}': download from ${src.where}`;
  if (callerSignal.aborted) {
    const reason = callerSignal.reason as { name?: unknown } | undefined;
    const timedOut = reason?.name === 'TimeoutError';
    return new Kvm2Error(
      'ERR_IMAGE_HTTP',
      timedOut ? `${prefix} ran out of time` : `${prefix} was cancelled`,
      { cause: err, kind: 'transient' },
    );
  }
  return new Kvm2Error('ERR_IMAGE_HTTP', `${prefix} failed: ${why(err)}`, {
    cause: err,
    kind: classifyError(err),
  });
}

/** The most specific thing a fetch failure says: the deepest `code`, else the message. */
function why(err: unknown): string {
  let message = err instanceof Error ? err.message : String(err);
  let code: string | undefined;
  let e: unknown = err;
  for (let depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    const fields = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof fields.code === 'string') code = fields.code;
    if (typeof fields.message === 'string' && fields.message !== '') message = fields.message;
    e = fields.cause;
  }
  return code === undefined || message.includes(code) ? message : `${message} (${code})`;
}
