// Stream plumbing for StorageVolUpload / StorageVolDownload (LIBVIRT-RPC-FACTS §5):
//   upload:   CALL, REPLY, STREAM/CONTINUE <raw bytes>..., our STREAM/OK, the daemon's STREAM/OK
//   download: CALL, REPLY, STREAM/CONTINUE <raw bytes>..., empty CONTINUE (end of data),
//             our STREAM/OK, the daemon's STREAM/OK
// A STREAM/ERROR from the daemon carries a remote_error and may come at any time.
import { ProtocolError } from './errors.js';
import { PREFIX_SIZE, STREAM_CHUNK_MAX, encodePrefix, type PacketHeader } from './packet.js';

/** The engine's side of a stream: what it does with the daemon's stream packets. */
export interface StreamSink {
  data(payload: Buffer): void;
  /** The daemon's STREAM/OK (finish confirmation). */
  finish(): void;
  /** The daemon's STREAM/ERROR: it has closed its side of the stream. */
  refuse(err: Error): void;
  /** A failure on our side or the link's: the daemon's side may still be open. */
  fail(err: Error): void;
}

const DOWNLOAD_HIGH_WATER = 4 * 1024 * 1024;
/** Packet buffers kept for reuse: more than the socket's slack holds at once. */
const SPARE_PACKETS = 8;

/**
 * Cuts upload data into STREAM/CONTINUE packets of 262,120 bytes, the size every libvirt
 * accepts: chunks of any size (an HTTP body arrives in ~64 KiB pieces) are gathered into one
 * packet, since the daemon pays per packet. Every byte is copied into a packet buffer, reused
 * once its frame is written: a source may reuse its own buffer as soon as `push` returns (as
 * virsh reads into one buffer), and no chunk is held after it. The copy costs less than the
 * garbage it saves (a 1 GiB upload from a reused 256 KiB buffer: 1.6 s and 6 MiB of RSS, from
 * fs.createReadStream's fresh chunks, sliced without a copy: 1.8–2.1 s and ~70 MiB).
 */
export class UploadPacketizer {
  private packet: Buffer | undefined;
  private fill = 0;
  /** Packet buffers whose frames have been written, kept for the next packets. */
  private readonly spare: Buffer[] = [];

  /**
   * `emit` sends the frames and calls `written` once the link has taken them (the write's
   * callback, or sooner: see uploadStream): the packet buffer is used again after that, never
   * before. `written` may be called more than once.
   */
  constructor(
    private readonly header: PacketHeader,
    private readonly emit: (frames: Buffer[], written: () => void) => void,
  ) {}

  push(chunk: Uint8Array): void {
    let off = 0;
    while (off < chunk.length) {
      this.packet ??= this.spare.pop() ?? Buffer.allocUnsafeSlow(PREFIX_SIZE + STREAM_CHUNK_MAX);
      const n = Math.min(STREAM_CHUNK_MAX - this.fill, chunk.length - off);
      this.packet.set(chunk.subarray(off, off + n), PREFIX_SIZE + this.fill);
      this.fill += n;
      off += n;
      if (this.fill === STREAM_CHUNK_MAX) this.flush();
    }
  }

  /** Sends what is gathered, if anything. */
  flush(): void {
    if (this.packet === undefined || this.fill === 0) return;
    encodePrefix(this.header, this.fill).copy(this.packet, 0);
    const packet = this.packet;
    const frame = packet.subarray(0, PREFIX_SIZE + this.fill);
    this.packet = undefined;
    this.fill = 0;
    let returned = false;
    this.emit([frame], () => {
      // Called when the link has taken the frame: at once when the link took it whole, and
      // again by the write's own callback, which may come later.
      if (returned) return;
      returned = true;
      if (this.spare.length < SPARE_PACKETS) this.spare.push(packet);
    });
  }
}

/** Upload side: remembers a server error or the finish confirmation. */
export class UploadSink implements StreamSink {
  /** The daemon sent its STREAM/OK or STREAM/ERROR: nothing of the stream is left open there. */
  daemonClosed = false;
  private failure: Error | undefined;
  private readonly failListeners = new Set<(e: Error) => void>();
  private resolveFinished!: () => void;
  private rejectFinished!: (e: Error) => void;
  readonly finished: Promise<void>;

  constructor() {
    this.finished = new Promise<void>((res, rej) => {
      this.resolveFinished = res;
      this.rejectFinished = rej;
    });
    this.finished.catch(() => undefined); // observed through throwIfFailed or awaited later
  }

  data(): void {
    this.fail(new ProtocolError('the daemon sent data on an upload stream'));
  }

  finish(): void {
    this.daemonClosed = true;
    if (this.failure === undefined) this.resolveFinished();
  }

  refuse(err: Error): void {
    this.daemonClosed = true;
    this.fail(err);
  }

  fail(err: Error): void {
    if (this.failure !== undefined) return;
    this.failure = err;
    this.rejectFinished(err);
    for (const l of this.failListeners) l(err);
  }

  onFail(l: (e: Error) => void): void {
    this.failListeners.add(l);
  }

  offFail(l: (e: Error) => void): void {
    this.failListeners.delete(l);
  }

  throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** Why the stream failed (the daemon's refusal, a stall, an abort); undefined while it has not. */
  get error(): Error | undefined {
    return this.failure;
  }
}

/** Download side: a bounded queue between the socket and the consumer. */
/** Pauses and resumes the link's reads; counted by the engine, so two sinks cannot undo each other. */
export interface ReadGate {
  pauseReads(): void;
  resumeReads(): void;
}

/** A download's `length`, and what to do when the daemon sends more than it. */
export interface DownloadLimit {
  readonly bytes: number;
  /** Called once, with the error the download fails with. */
  readonly exceeded: (err: ProtocolError) => void;
}

export class DownloadSink implements StreamSink {
  /** The daemon sent its STREAM/OK or STREAM/ERROR: nothing of the stream is left open there. */
  daemonClosed = false;
  private readonly chunks: Buffer[] = [];
  private queued = 0;
  private received = 0;
  private paused = false;
  private eof = false;
  private failure: Error | undefined;
  private waiter: (() => void) | undefined;
  private resolveFinished!: () => void;
  private rejectFinished!: (e: Error) => void;
  readonly finished: Promise<void>;

  constructor(
    private readonly gate: ReadGate,
    private readonly limit?: DownloadLimit,
  ) {
    this.finished = new Promise<void>((res, rej) => {
      this.resolveFinished = res;
      this.rejectFinished = rej;
    });
    this.finished.catch(() => undefined);
  }

  data(payload: Buffer): void {
    if (payload.length === 0)
      this.eof = true; // an empty CONTINUE marks the end of data
    else {
      // A daemon that sends past the length asked for would grow the memory of a consumer
      // that keeps all it gets (a small volume read whole): nothing past it is queued.
      this.received += payload.length;
      if (this.limit !== undefined && this.received > this.limit.bytes) {
        if (this.failure !== undefined) return;
        const err = new ProtocolError(
          `the daemon sent more than the ${this.limit.bytes} bytes a download asked for`,
        );
        this.fail(err);
        this.limit.exceeded(err);
        return;
      }
      this.chunks.push(payload);
      this.queued += payload.length;
      if (this.queued > DOWNLOAD_HIGH_WATER) this.setPaused(true);
    }
    this.wake();
  }

  finish(): void {
    this.daemonClosed = true;
    this.eof = true;
    this.resolveFinished();
    this.wake();
  }

  refuse(err: Error): void {
    this.daemonClosed = true;
    this.fail(err);
  }

  fail(err: Error): void {
    if (this.failure !== undefined) return;
    this.failure = err;
    this.rejectFinished(err);
    this.wake();
  }

  async next(): Promise<Buffer | null> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk !== undefined) {
        this.queued -= chunk.length;
        if (this.queued <= DOWNLOAD_HIGH_WATER / 2) this.setPaused(false);
        return chunk;
      }
      if (this.failure !== undefined) throw this.failure;
      if (this.eof) return null;
      await new Promise<void>((res) => (this.waiter = res));
    }
  }

  /** Gives the link back (called when the download ends, however it ends). */
  release(): void {
    this.setPaused(false);
  }

  private setPaused(on: boolean): void {
    if (on === this.paused) return;
    this.paused = on;
    if (on) this.gate.pauseReads();
    else this.gate.resumeReads();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}
