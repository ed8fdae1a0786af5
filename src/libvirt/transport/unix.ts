// The local transport: libvirtd's UNIX socket (/var/run/libvirt/libvirt-sock by default).
import net from 'node:net';
import { DialError } from './dial-error.js';
import type { DialOptions, Link } from './types.js';

/**
 * Connects to a daemon socket on this machine. `host` only names the target in errors.
 * Every failure is a DialError of stage `socket`: `socket_unavailable` when the socket is
 * missing, refuses or is not ours to open, `timeout`/`aborted` when the budget or the signal
 * ends the dial first.
 */
export async function dialUnix(
  socketPath: string,
  host: string,
  opts: DialOptions = {},
): Promise<Link> {
  const { signal, timeoutMs } = opts;
  const label = `unix ${socketPath}`;
  if (signal?.aborted === true) {
    throw new DialError(`${label}: dial aborted`, 'socket', host, 'aborted', {
      cause: signal.reason,
    });
  }

  // onread hands each read to us in one reused buffer, skipping the stream machinery's
  // allocation and buffering per read: a call's bookkeeping is dominated by such costs. The
  // bytes are copied out (small frames come from Node's pool), then emitted as 'data'.
  const readBuffer = Buffer.allocUnsafe(64 * 1024);
  const socket: net.Socket = net.connect({
    path: socketPath,
    onread: {
      buffer: readBuffer,
      callback: (n: number, buf: Uint8Array): boolean => {
        socket.emit('data', Buffer.from(buf.subarray(0, n)));
        return true;
      },
    },
  });
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  let onError: ((err: Error) => void) | undefined;
  let onConnect: (() => void) | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      onConnect = resolve;
      onError = (err: NodeJS.ErrnoException) => {
        const why = err.code ?? err.message;
        reject(
          new DialError(`${label}: cannot connect (${why})`, 'socket', host, 'socket_unavailable', {
            cause: err,
          }),
        );
      };
      onAbort = () => {
        reject(
          new DialError(`${label}: dial aborted`, 'socket', host, 'aborted', {
            cause: signal?.reason,
          }),
        );
      };
      socket.once('connect', onConnect);
      socket.once('error', onError);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          reject(
            new DialError(
              `${label}: no connection within ${timeoutMs} ms`,
              'socket',
              host,
              'timeout',
            ),
          );
        }, timeoutMs);
      }
    });
  } catch (err) {
    socket.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    if (onConnect !== undefined) socket.removeListener('connect', onConnect);
    if (onError !== undefined) socket.removeListener('error', onError);
  }

  return {
    stream: socket,
    close: () => {
      socket.destroy();
    },
  };
}
