// Packet framing (src/rpc/virnetprotocol.x, virnetmessage.c):
//
//   +--------+----------+----------+----------+----------+------------+------------+---------+
//   | len u32| prog u32 | vers u32 | proc i32 | type i32 | serial u32 | status i32 | payload |
//   +--------+----------+----------+----------+----------+------------+------------+---------+
//   len counts itself: 4 + 24 + payload. Replies carry their call's serial and may arrive in
//   any order; keepalive and events use serial 0.
import { ProtocolError } from './errors.js';
import { XdrWriter } from './xdr.js';

export const LEN_SIZE = 4;
export const HEADER_SIZE = 24;
export const PREFIX_SIZE = LEN_SIZE + HEADER_SIZE;
/** VIR_NET_MESSAGE_MAX: header + payload, the length word excluded. */
export const MESSAGE_MAX = 33554432;
/** VIR_NET_MESSAGE_LEGACY_PAYLOAD_MAX: the stream chunk every libvirt accepts. */
export const STREAM_CHUNK_MAX = 262120;

export const MessageType = {
  CALL: 0,
  REPLY: 1,
  MESSAGE: 2,
  STREAM: 3,
  CALL_WITH_FDS: 4,
  REPLY_WITH_FDS: 5,
  STREAM_HOLE: 6,
} as const;

export const MessageStatus = { OK: 0, ERROR: 1, CONTINUE: 2 } as const;

export interface PacketHeader {
  prog: number;
  vers: number;
  proc: number;
  type: number;
  serial: number;
  status: number;
}

/** A writer whose first 28 bytes are left for the length word and header. */
export function packetWriter(sizeHint = 256): XdrWriter {
  return new XdrWriter(sizeHint, PREFIX_SIZE);
}

/** Fills in the length word and header of a writer made by `packetWriter`; returns the frame. */
export function sealPacket(w: XdrWriter, h: PacketHeader): Buffer {
  const frame = w.finish();
  w.setUint32At(0, frame.length);
  w.setUint32At(4, h.prog);
  w.setUint32At(8, h.vers);
  w.setInt32At(12, h.proc);
  w.setInt32At(16, h.type);
  w.setUint32At(20, h.serial);
  w.setInt32At(24, h.status);
  return frame;
}

/** The 28-byte prefix alone, for stream data written after it without a copy. */
export function encodePrefix(h: PacketHeader, payloadLength: number): Buffer {
  const b = Buffer.allocUnsafe(PREFIX_SIZE);
  b.writeUInt32BE(PREFIX_SIZE + payloadLength, 0);
  b.writeUInt32BE(h.prog, 4);
  b.writeUInt32BE(h.vers, 8);
  b.writeInt32BE(h.proc, 12);
  b.writeInt32BE(h.type, 16);
  b.writeUInt32BE(h.serial, 20);
  b.writeInt32BE(h.status, 24);
  return b;
}

export type FrameHandler = (header: PacketHeader, payload: Buffer) => void;

/**
 * Splits a byte stream into frames. Fed whatever chunks the socket gives; calls `onFrame` once
 * per complete frame, in order. A length word outside [28, 4 + 32 MiB] cannot be resynchronised
 * from, so it throws ProtocolError and the caller must drop the link.
 *
 * A frame that arrives in pieces is copied into one buffer of its length as they come, never
 * kept as the pieces: a daemon that sends a large frame a byte at a time would otherwise hold
 * ~120 bytes of heap per byte sent (a Buffer each), gigabytes for one 32 MiB frame.
 */
export class FrameDecoder {
  /** The frame being assembled, its full length once the length word is known. */
  private partial: Buffer | undefined;
  private filled = 0;

  constructor(
    private readonly onFrame: FrameHandler,
    private readonly maxFrame = LEN_SIZE + MESSAGE_MAX,
  ) {}

  push(chunk: Buffer): void {
    const partial = this.partial;
    if (partial === undefined) {
      this.drain(chunk);
      return;
    }
    if (partial.length < LEN_SIZE) {
      // Fewer than 4 bytes of the length word: start again with them in front (rare, tiny).
      const head = partial.subarray(0, this.filled);
      this.partial = undefined;
      this.filled = 0;
      this.drain(Buffer.concat([head, chunk]));
      return;
    }
    const taken = Math.min(partial.length - this.filled, chunk.length);
    chunk.copy(partial, this.filled, 0, taken);
    this.filled += taken;
    if (this.filled < partial.length) return;
    this.partial = undefined;
    this.filled = 0;
    this.emit(partial, 0, partial.length);
    if (taken < chunk.length) this.drain(chunk.subarray(taken));
  }

  /** Bytes received that do not yet form a whole frame. */
  get pendingBytes(): number {
    return this.filled;
  }

  private frameLength(prefix: Buffer): number {
    const len = prefix.readUInt32BE(0);
    if (len < PREFIX_SIZE) {
      throw new ProtocolError(`frame length ${len} is shorter than the ${PREFIX_SIZE}-byte header`);
    }
    if (len > this.maxFrame) {
      throw new ProtocolError(`frame length ${len} exceeds libvirt's maximum of ${this.maxFrame}`);
    }
    return len;
  }

  private emit(buf: Buffer, off: number, len: number): void {
    const header: PacketHeader = {
      prog: buf.readUInt32BE(off + 4),
      vers: buf.readUInt32BE(off + 8),
      proc: buf.readInt32BE(off + 12),
      type: buf.readInt32BE(off + 16),
      serial: buf.readUInt32BE(off + 20),
      status: buf.readInt32BE(off + 24),
    };
    this.onFrame(header, buf.subarray(off + PREFIX_SIZE, off + len));
  }

  // Emits every whole frame in `buf` and keeps the tail.
  private drain(buf: Buffer): void {
    let off = 0;
    while (buf.length - off >= LEN_SIZE) {
      const len = this.frameLength(buf.subarray(off, off + LEN_SIZE));
      if (buf.length - off < len) break;
      const at = off;
      off += len;
      this.emit(buf, at, len);
    }
    if (off < buf.length) {
      const rest = buf.subarray(off);
      const partial = Buffer.allocUnsafe(
        rest.length >= LEN_SIZE ? this.frameLength(rest) : LEN_SIZE - 1,
      );
      rest.copy(partial);
      this.partial = partial;
      this.filled = rest.length;
    }
  }
}
