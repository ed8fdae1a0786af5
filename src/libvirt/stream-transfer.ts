// The two stream procedures of libvirt's RPC (LIBVIRT-RPC-FACTS §5) on top of an RpcClient's
// link: an upload (@writestream, StorageVolUpload) and a download (@readstream,
// StorageVolDownload), each a call that opens the stream, the data, and the finish handshake.
// A signal that fires mid-stream kills the link: libvirt cannot cancel a stream either.
import type { Duplex } from 'node:stream';
import { CallAbortedError, LinkInterruptedError } from './errors.js';
import { MessageStatus, MessageType, encodePrefix, type PacketHeader } from './packet.js';
import type { Procedure } from './procedure.js';
import {
  DownloadSink,
  UploadPacketizer,
  UploadSink,
  type ReadGate,
  type StreamSink,
} from './streams.js';

/** Bytes an upload lets the socket hold before it waits for 'drain'. */
const UPLOAD_BUFFER_BYTES = 1024 * 1024;

export interface StreamCallOptions {
  readonly signal?: AbortSignal | undefined;
  readonly timeoutMs?: number | undefined;
}

/** What a stream needs of the client that owns the link. */
export interface StreamChannel extends ReadGate {
  readonly host: string;
  readonly link: Duplex;
  isDown(): boolean;
  /** Makes the call that opens the stream, with `sink` registered for its serial first. */
  open<A>(
    proc: Procedure<A, unknown>,
    args: A,
    sink: StreamSink,
    options?: StreamCallOptions,
  ): Promise<number>;
  /** Forgets the stream's serial: late packets for it are dropped. */
  forget(serial: number): void;
  write(frame: Buffer): void;
  destroy(reason?: Error): void;
}

function streamHeader(
  proc: Procedure<never, unknown>,
  serial: number,
  status: number,
): PacketHeader {
  return {
    prog: proc.program,
    vers: proc.version,
    proc: proc.proc,
    type: MessageType.STREAM,
    serial,
    status,
  };
}

/** Kills the link when `signal` fires during the stream; returns the undo. */
function abandonOnAbort(
  channel: StreamChannel,
  sink: StreamSink,
  what: string,
  procName: string,
  signal: AbortSignal | undefined,
): () => void {
  const onAbort = (): void => {
    sink.fail(new CallAbortedError(procName, false, { cause: signal?.reason }));
    channel.destroy(new LinkInterruptedError(`${channel.host}: ${what} ${procName} was abandoned`));
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) onAbort();
  return () => signal?.removeEventListener('abort', onAbort);
}

/**
 * The call, then `source` as stream data in chunks libvirt always accepts, with socket
 * back-pressure, then the finish handshake. Memory in flight stays at one chunk of `source`
 * plus the socket's buffer, whatever the size.
 */
export async function uploadStream<A>(
  channel: StreamChannel,
  proc: Procedure<A, unknown>,
  args: A,
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  options?: StreamCallOptions,
): Promise<void> {
  const sink = new UploadSink();
  const serial = await channel.open(proc, args, sink, options);
  const undo = abandonOnAbort(channel, sink, 'upload', proc.name, options?.signal);
  const link = channel.link;
  try {
    const header = streamHeader(proc, serial, MessageStatus.CONTINUE);
    const packets = new UploadPacketizer(header, (frames) => {
      if (frames.length === 1) link.write(frames[0]);
      else {
        link.cork();
        for (const f of frames) link.write(f);
        link.uncork();
      }
    });
    for await (const chunk of source) {
      sink.throwIfFailed();
      packets.push(chunk);
      // Socket back-pressure with a little slack: waiting for a full drain after every
      // packet would leave the daemon idle between packets. 'drain' comes only after a
      // write was refused (an SSH channel accepts up to 2 MiB before it refuses).
      if (link.writableNeedDrain && link.writableLength > UPLOAD_BUFFER_BYTES) {
        await drained(link, sink);
      }
    }
    packets.flush();
    sink.throwIfFailed();
    channel.write(encodePrefix({ ...header, status: MessageStatus.OK }, 0));
    await sink.finished;
  } catch (err) {
    // The source failed (or we did) with the daemon's stream still open: without a finish
    // the daemon would keep the volume busy until the link closed. Closing it is the abort.
    // A failure the daemon reported has already closed its side.
    if (!channel.isDown() && !sink.failed) {
      channel.destroy(
        new LinkInterruptedError(`${channel.host}: upload ${proc.name} failed before its end`, {
          cause: err,
        }),
      );
    }
    throw err;
  } finally {
    undo();
    channel.forget(serial);
  }
}

/**
 * The call, then the data as it comes; the link is paused while the consumer lags, so memory
 * stays bounded. Ends with the finish handshake (go-libvirt skips it and leaves the daemon's
 * stream open: LIBVIRT-RPC-FACTS §5).
 */
export async function* downloadStream<A>(
  channel: StreamChannel,
  proc: Procedure<A, unknown>,
  args: A,
  options?: StreamCallOptions,
): AsyncGenerator<Buffer, void, undefined> {
  const sink = new DownloadSink(channel);
  const serial = await channel.open(proc, args, sink, options);
  const undo = abandonOnAbort(channel, sink, 'download', proc.name, options?.signal);
  try {
    for (;;) {
      const chunk = await sink.next();
      if (chunk === null) break;
      yield chunk;
    }
    channel.write(encodePrefix(streamHeader(proc, serial, MessageStatus.OK), 0));
    await sink.finished;
  } finally {
    undo();
    channel.forget(serial);
    sink.release();
  }
}

function drained(link: Duplex, sink: UploadSink): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = (err?: Error): void => {
      link.off('drain', onDrain);
      sink.offFail(onFail);
      if (err === undefined) resolve();
      else reject(err);
    };
    const onDrain = (): void => done();
    const onFail = (err: Error): void => done(err);
    link.on('drain', onDrain);
    sink.onFail(onFail);
  });
}
