// Images from a local file (SPEC §5, docs/image-cache.md): a `file:///…` URL or an absolute
// path in the configuration, on the worker's machine (a golden image on a local disk or a
// shared mount). Streamed into the pool and checked like a download: the same fill, cache,
// locks and size cap; only where the bytes come from differs. Errors name the image and the
// path, with the kind the file's error says: a missing, unreadable or non-regular file is the
// configuration's (permanent), an I/O error the disk's (transient).
import { constants, type Stats } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { Kvm2Error } from '../../errors/error.js';
import type { ErrorKind } from '../../errors/kind.js';

/** Read this much at a time: the upload's own chunking sits above it. */
const READ_CHUNK_BYTES = 1 << 20;

/** errno codes that mean the configuration names a file kvm2 cannot use. */
const PERMANENT_CODES: ReadonlySet<string> = new Set([
  'ENOENT',
  'ENOTDIR',
  'EACCES',
  'EPERM',
  'EISDIR',
  'ELOOP',
  'ENAMETOOLONG',
  'ENXIO',
]);

export interface LocalImage {
  readonly length: number;
  readonly body: AsyncIterable<Uint8Array>;
  readonly cancel: () => void;
}

/** Opens the image's file; resolves once it is known to be a non-empty regular file. */
export async function openLocalImage(
  imageName: string,
  path: string,
  options: { signal: AbortSignal },
): Promise<LocalImage> {
  options.signal.throwIfAborted();
  let handle: FileHandle;
  try {
    // O_NONBLOCK: a FIFO at the path must not hang the open (it is refused below, not a file).
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw fileError(imageName, path, err);
  }
  try {
    const length = checkFile(imageName, path, await handle.stat());
    const stream = handle.createReadStream({
      highWaterMark: READ_CHUNK_BYTES,
      signal: options.signal,
      autoClose: true,
    });
    const cancel = (): void => {
      stream.destroy();
    };
    return { length, body: chunks(imageName, path, stream, options.signal), cancel };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err instanceof Kvm2Error ? err : fileError(imageName, path, err);
  }
}

/** The file's size: the pool-space precheck's probe. */
export async function localImageSize(imageName: string, path: string): Promise<number> {
  try {
    return checkFile(imageName, path, await stat(path));
  } catch (err) {
    throw err instanceof Kvm2Error ? err : fileError(imageName, path, err);
  }
}

function checkFile(imageName: string, path: string, info: Stats): number {
  if (!info.isFile()) {
    throw new Kvm2Error('ERR_IMAGE_FILE', `image '${imageName}': ${path} is not a regular file`, {
      kind: 'permanent',
    });
  }
  if (info.size === 0) {
    throw new Kvm2Error('ERR_IMAGE_EMPTY', `image '${imageName}': ${path} is empty`);
  }
  return info.size;
}

async function* chunks(
  imageName: string,
  path: string,
  stream: AsyncIterable<Buffer>,
  signal: AbortSignal,
): AsyncGenerator<Uint8Array, void, undefined> {
  try {
    for await (const chunk of stream) yield chunk;
  } catch (err) {
    if (signal.aborted) {
      throw new Kvm2Error('ERR_IMAGE_FILE', `image '${imageName}': reading ${path} was cancelled`, {
        cause: err,
        kind: 'transient',
      });
    }
    throw fileError(imageName, path, err);
  }
}

/** The error of a failed open, stat or read of the image file, its kind by the errno. */
export function fileError(imageName: string, path: string, err: unknown): Kvm2Error {
  const code = (err as NodeJS.ErrnoException).code;
  const kind: ErrorKind =
    code !== undefined && PERMANENT_CODES.has(code) ? 'permanent' : 'transient';
  const what = code === 'ENOENT' ? 'does not exist' : `cannot be read: ${(err as Error).message}`;
  return new Kvm2Error('ERR_IMAGE_FILE', `image '${imageName}': ${path} ${what}`, {
    cause: err,
    kind,
  });
}
