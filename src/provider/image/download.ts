// Image downloads over HTTP(S) (SPEC §5): the GET that feeds a fill, and the size probe of the
// pool-space precheck (HEAD, falling back to a GET's headers when HEAD is refused). A `file:`
// image is read from the local file instead (local-file.ts), through the same two calls. Errors carry
// a code and the classification table's kind, and name the image and the URL's host only: a
// URL's userinfo or query string may hold a token.
import { fileURLToPath } from 'node:url';
import { EnvHttpProxyAgent, fetch, type Dispatcher, type Response } from 'undici';
import { classifyError, httpStatusKind } from '../../errors/classify.js';
import type { ErrorKind } from '../../errors/kind.js';
import type { ImageConfig } from '../config/schema.js';
import { Kvm2Error, type Kvm2ErrorCode } from '../../errors/error.js';
import { localImageSize, openLocalImage } from './local-file.js';

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

// HTTP_PROXY / HTTPS_PROXY / NO_PROXY are honoured: image servers often sit behind a proxy.
function imageDispatcher(): Dispatcher {
  dispatcher ??= new EnvHttpProxyAgent({
    connect: { timeout: DOWNLOAD_TIMEOUTS.connectMs },
    headersTimeout: DOWNLOAD_TIMEOUTS.headersMs,
    bodyTimeout: DOWNLOAD_TIMEOUTS.bodyIdleMs,
  });
  return dispatcher;
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
  let response: Response;
  try {
    response = await send(src, 'GET', signal);
  } catch (err) {
    throw networkError(src, err, options.signal);
  }
  try {
    if (!response.ok) throw statusError(src, response);
    const length = contentLength(response);
    if (length === 0) throw emptyError(src);
    return { length, body: bodyChunks(src, response, options.signal), cancel };
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
    const head = await send(src, 'HEAD', AbortSignal.any([options.signal, local.signal]));
    if (head.ok) {
      const length = contentLength(head);
      if (length === 0) throw emptyError(src);
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

function send(src: ImageSource, method: 'GET' | 'HEAD', signal: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = {
    // Identity: the bytes hashed and uploaded are the image itself, and Content-Length its size.
    'accept-encoding': 'identity',
    'user-agent': 'kvm2',
  };
  if (src.authorization !== undefined) headers.authorization = src.authorization;
  return fetch(src.url, { method, headers, signal, dispatcher: imageDispatcher() });
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
