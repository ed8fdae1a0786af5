// The two stream procedures of libvirt's RPC (LIBVIRT-RPC-FACTS §5) on top of an RpcClient's
// link: an upload (@writestream, StorageVolUpload) and a download (@readstream,
// StorageVolDownload), each a call that opens the stream, the data, and the finish handshake.
// A signal that fires mid-stream kills the link: libvirt cannot cancel a stream either.
import type { Duplex } from 'node:stream';
import { CallAbortedError, LinkInterruptedError, StreamStalledError } from './errors.js';
import {
  MessageStatus,
  MessageType,
  PREFIX_SIZE,
  STREAM_CHUNK_MAX,
  encodePrefix,
  type PacketHeader,
} from './packet.js';
import type { Procedure } from './procedure.js';
import { StorageVolDownload, type StorageVolDownloadArgs } from './protocol.gen.js';
import {
  DownloadSink,
  UploadPacketizer,
  UploadSink,
  type ReadGate,
  type StreamSink,
} from './streams.js';

/**
 * Bytes an upload lets the link hold beyond what it has taken before it waits for 'drain': one
 * packet, so at most the packet being written and the next are queued. With 1 MiB held (four
 * packets waiting behind the kernel's socket buffer) a 1 GiB upload over the UNIX socket ran
 * 2.6-7.7% slower in four A/Bs of 15 interleaved rounds, each packet written long after it was
 * filled; over SSH the same (docs/benchmarks.md, #20 fourteenth slices).
 */
const UPLOAD_BUFFER_BYTES = PREFIX_SIZE + STREAM_CHUNK_MAX;
/**
 * Bytes an upload sends, at most, between two turns of the event loop. A source that never
 * waits, into a link that takes every write at once, would otherwise hold the loop for the
 * whole upload: no keepalive answered, no timer run, no other call's reply read (a 1 GiB upload
 * from a generator went 50 ms at a time without one). 4 MiB is ~3 ms at 1.3 GB/s.
 */
const UPLOAD_TURN_BYTES = 4 * 1024 * 1024;

export interface StreamCallOptions {
  readonly signal?: AbortSignal | undefined;
  /** The budget of the call that opens the stream. */
  readonly timeoutMs?: number | undefined;
  /** How long the daemon may move no bytes while the stream waits on it; overrides the client's. */
  readonly stallMs?: number | undefined;
}

/** What a stream needs of the client that owns the link. */
export interface StreamChannel extends ReadGate {
  readonly host: string;
  readonly link: Duplex;
  /** The client's stall limit for streams, ms. */
  readonly stallMs: number;
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
 * The stall limit of one stream (StreamStalledError). The clock runs only while the stream waits
 * on the daemon (for 'drain' on an upload, for data on a download, for the finish), and starts
 * again at each wait and each chunk, so a slow HTTP source or a consumer that lags never counts
 * against the daemon. One timer for the whole stream, re-armed when it fires early, rather
 * than one per chunk.
 */
class StallWatch {
  #waits = 0;
  #since = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ms: number,
    private readonly onStall: () => void,
  ) {}

  /** `wait`, a wait on the daemon, with the clock running while it is pending. */
  async on<T>(wait: Promise<T>): Promise<T> {
    this.#since = performance.now();
    if (this.#waits++ === 0 && this.#timer === undefined) this.#arm(this.ms);
    try {
      return await wait;
    } finally {
      this.#waits -= 1;
    }
  }

  /** Bytes moved: the daemon is alive. */
  progress(): void {
    this.#since = performance.now();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#check(), Math.max(1, ms));
    this.#timer.unref();
  }

  #check(): void {
    this.#timer = undefined;
    if (this.#waits === 0) return; // re-armed by the next wait
    const idle = performance.now() - this.#since;
    if (idle >= this.ms) this.onStall();
    else this.#arm(this.ms - idle);
  }
}

/** A stall watch that fails `sink` and kills the link when the daemon stops moving bytes. */
function watchStall(
  channel: StreamChannel,
  sink: StreamSink,
  what: string,
  procName: string,
  stallMs: number | undefined,
): StallWatch {
  const ms = stallMs ?? channel.stallMs;
  return new StallWatch(ms, () => {
    const err = new StreamStalledError(procName, ms);
    sink.fail(err);
    channel.destroy(
      new LinkInterruptedError(`${channel.host}: ${what} ${procName} stalled`, { cause: err }),
    );
  });
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
  const stall = watchStall(channel, sink, 'upload', proc.name, options?.stallMs);
  const link = channel.link;
  const chunks = iterate(source);
  // Rejects the wait for the source's next chunk when the stream fails meanwhile. Not
  // Promise.race with one long-lived promise: each race would leave a reaction on it, one per
  // chunk for the upload's whole length.
  let interrupt: ((err: Error) => void) | undefined;
  const onFail = (err: Error): void => interrupt?.(err);
  sink.onFail(onFail);
  const nextChunk = (): Promise<IteratorResult<Uint8Array>> =>
    new Promise((resolve, reject) => {
      interrupt = reject;
      Promise.resolve(chunks.next()).then(resolve, reject);
    });
  let sourceDone = false;
  try {
    const header = streamHeader(proc, serial, MessageStatus.CONTINUE);
    const packets = new UploadPacketizer(header, (frames, written) => {
      if (frames.length === 1) link.write(frames[0], written);
      else {
        link.cork();
        frames.forEach((f, i) => link.write(f, i === frames.length - 1 ? written : undefined));
        link.uncork();
      }
      // Nothing left queued: the link has taken every byte (a Writable counts a write until
      // its _write calls back, after which the chunk is the caller's again), so the packet's
      // buffer is free now. The write's own callback runs on the next tick, which a source
      // that never waits (an array, a generator, readSync) would not give before the next
      // packet: each packet took a fresh buffer, 32 MiB of garbage for 32 MiB sent.
      if (link.writableLength === 0) written();
    });
    let sinceTurn = 0;
    for (;;) {
      sink.throwIfFailed();
      // A daemon that refuses the stream (a full pool) while the source waits (a quiet image
      // server) is heard now, not at the source's next chunk or its timeout minutes later.
      const next = await nextChunk();
      interrupt = undefined;
      if (next.done === true) break;
      const chunk = next.value;
      sink.throwIfFailed();
      packets.push(chunk);
      sinceTurn += chunk.length;
      // Socket back-pressure with one packet of slack: the next packet is gathered while the
      // link still writes the last, and no more is queued. 'drain' comes only after a write
      // was refused (an SSH channel accepts up to 2 MiB before it refuses).
      if (link.writableNeedDrain && link.writableLength > UPLOAD_BUFFER_BYTES) {
        await stall.on(drained(link, sink));
        sinceTurn = 0;
      } else if (sinceTurn >= UPLOAD_TURN_BYTES) {
        await stall.on(nextTurn());
        sinceTurn = 0;
      }
    }
    sourceDone = true;
    packets.flush();
    sink.throwIfFailed();
    channel.write(encodePrefix({ ...header, status: MessageStatus.OK }, 0));
    await stall.on(sink.finished);
  } catch (err) {
    // The stream's own failure first, taken before the link is closed below (which fails the
    // sink too): a source that failed after it (its body cut as the link went) is not the cause.
    const cause = sink.error ?? err;
    // Told to stop (an HTTP body released), not awaited: a source waiting in next() ends that
    // wait first. for-await did this; a source that threw is done already.
    if (!sourceDone) void Promise.resolve(chunks.return?.()).catch(() => undefined);
    // The source failed (or we did, or the daemon sent data) with the daemon's stream still
    // open: without a finish the daemon would keep the volume busy until the link closed.
    // Closing it is the abort. A failure the daemon reported has already closed its side.
    if (!channel.isDown() && !sink.daemonClosed) {
      channel.destroy(
        new LinkInterruptedError(`${channel.host}: upload ${proc.name} failed before its end`, {
          cause: err,
        }),
      );
    }
    throw cause;
  } finally {
    sink.offFail(onFail);
    stall.stop();
    undo();
    channel.forget(serial);
  }
}

/** One iterator over either kind of source. */
function iterate(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): AsyncIterator<Uint8Array> | Iterator<Uint8Array> {
  return Symbol.asyncIterator in source
    ? source[Symbol.asyncIterator]()
    : source[Symbol.iterator]();
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
  const bytes = askedLength(proc, args);
  const sink = new DownloadSink(
    channel,
    bytes === undefined
      ? undefined
      : {
          bytes,
          // As for any frame the daemon should never send: the link is not to be trusted.
          exceeded: (err) =>
            channel.destroy(
              new LinkInterruptedError(
                `${channel.host}: download ${proc.name} got more than it asked for`,
                { cause: err },
              ),
            ),
        },
  );
  const stall = watchStall(channel, sink, 'download', proc.name, options?.stallMs);
  let serial: number | undefined;
  let undo = (): void => undefined;
  try {
    serial = await channel.open(proc, args, sink, options);
    undo = abandonOnAbort(channel, sink, 'download', proc.name, options?.signal);
    for (;;) {
      const chunk = await stall.on(sink.next());
      if (chunk === null) break;
      yield chunk;
      stall.progress();
    }
    channel.write(encodePrefix(streamHeader(proc, serial, MessageStatus.OK), 0));
    await stall.on(sink.finished);
  } finally {
    stall.stop();
    undo();
    // Ended on our side (the consumer stopped, a frame the daemon should never send) with the
    // daemon's stream still open: it would keep reading the volume into the link. As for an
    // upload, closing the link is the abort.
    if (serial !== undefined && !sink.daemonClosed && !channel.isDown()) {
      channel.destroy(
        new LinkInterruptedError(`${channel.host}: download ${proc.name} ended before its end`),
      );
    }
    if (serial !== undefined) channel.forget(serial);
    sink.release();
  }
}

/**
 * The bytes a download asked for: StorageVolDownload's non-zero `length` (0 asks for the rest
 * of the volume, LIBVIRT-RPC-FACTS §5), the one @readstream procedure that takes a length.
 */
function askedLength<A>(proc: Procedure<A, unknown>, args: A): number | undefined {
  if (proc.proc !== StorageVolDownload.proc || proc.program !== StorageVolDownload.program) {
    return undefined;
  }
  const { length } = args as StorageVolDownloadArgs;
  return length > 0n ? Number(length) : undefined;
}

/** The event loop's next turn (its I/O, timers and ticks run first). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
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
