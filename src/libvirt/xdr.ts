// XDR (RFC 4506) as libvirt's rpcgen uses it: big-endian, every item padded to 4 bytes,
// char/short/bool take a full word, hypers are 8 bytes (bigint here: cpu time in ns and
// capacities in bytes outgrow 2^53), optionals are a 4-byte bool then the value.
import { Kvm2Error, type Kvm2ErrorOptions } from '../errors/error.js';

/** Raised by the decoder for input that does not fit the layout. Never thrown for valid data. */
export class XdrError extends Kvm2Error {
  declare readonly code: 'ERR_XDR_DECODE';
  override name = 'XdrError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_XDR_DECODE', message, options);
  }
}

function pad4(n: number): number {
  return (4 - (n & 3)) & 3;
}

/**
 * Appends XDR items to a growable buffer. A writer can reserve room at its start (the packet
 * header) so one buffer carries the whole frame and nothing is copied before the socket write.
 */
export class XdrWriter {
  // Buffer's own read/write methods rather than a DataView: no extra object per packet, and
  // V8 inlines them. Small buffers come from Node's shared pool.
  private buf: Buffer;
  offset: number;

  constructor(initialSize = 256, reserved = 0) {
    this.buf = Buffer.allocUnsafe(Math.max(initialSize, reserved + 16));
    this.offset = reserved;
  }

  private ensure(n: number): void {
    const need = this.offset + n;
    if (need <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < need) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.offset);
    this.buf = next;
  }

  int(v: number): void {
    this.ensure(4);
    this.buf.writeInt32BE(v, this.offset);
    this.offset += 4;
  }

  uint(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32BE(v, this.offset);
    this.offset += 4;
  }

  hyper(v: bigint): void {
    this.ensure(8);
    this.buf.writeBigInt64BE(v, this.offset);
    this.offset += 8;
  }

  uhyper(v: bigint): void {
    this.ensure(8);
    this.buf.writeBigUInt64BE(v, this.offset);
    this.offset += 8;
  }

  bool(v: boolean): void {
    this.uint(v ? 1 : 0);
  }

  double(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleBE(v, this.offset);
    this.offset += 8;
  }

  float(v: number): void {
    this.ensure(4);
    this.buf.writeFloatBE(v, this.offset);
    this.offset += 4;
  }

  /** `string<max>`: u32 byte length, UTF-8 bytes, zero padding. */
  string(v: string, max = 0xffffffff): void {
    const len = Buffer.byteLength(v, 'utf8');
    if (len > max) throw new RangeError(`XDR string of ${len} bytes exceeds its limit of ${max}`);
    this.ensure(4 + len + 3);
    this.buf.writeUInt32BE(len, this.offset);
    this.offset += 4;
    this.buf.write(v, this.offset, len, 'utf8');
    this.offset += len;
    this.zeroPad(len);
  }

  /** `opaque<max>`: u32 length, bytes, zero padding. */
  opaque(v: Uint8Array, max = 0xffffffff): void {
    if (v.length > max) throw new RangeError(`XDR opaque of ${v.length} bytes exceeds ${max}`);
    this.uint(v.length);
    this.fixedOpaque(v, v.length);
  }

  /** `opaque[n]`: exactly n bytes, zero padding, no length word. */
  fixedOpaque(v: Uint8Array, n: number): void {
    if (v.length !== n) throw new RangeError(`XDR fixed opaque wants ${n} bytes, got ${v.length}`);
    this.ensure(n + 3);
    this.buf.set(v, this.offset);
    this.offset += n;
    this.zeroPad(n);
  }

  /** Array counts (`T x<max>`) with their limit checked before anything is written. */
  count(n: number, max: number): void {
    if (n > max) throw new RangeError(`XDR array of ${n} items exceeds its limit of ${max}`);
    this.uint(n);
  }

  private zeroPad(n: number): void {
    const p = pad4(n);
    for (let i = 0; i < p; i++) this.buf[this.offset++] = 0;
  }

  setUint32At(at: number, v: number): void {
    this.buf.writeUInt32BE(v, at);
  }

  setInt32At(at: number, v: number): void {
    this.buf.writeInt32BE(v, at);
  }

  /** The bytes written so far (a view, not a copy). */
  finish(): Buffer {
    return this.buf.subarray(0, this.offset);
  }
}

/** Reads XDR items from a buffer slice; every read checks the bytes left first. */
export class XdrReader {
  offset: number;
  readonly end: number;

  constructor(
    readonly buf: Buffer,
    start = 0,
    end = buf.length,
  ) {
    this.offset = start;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.offset;
  }

  private need(n: number, what: string): void {
    if (this.offset + n > this.end) {
      throw new XdrError(
        `truncated XDR: ${what} needs ${n} bytes at offset ${this.offset}, ${this.remaining} left`,
      );
    }
  }

  int(): number {
    this.need(4, 'int');
    const v = this.buf.readInt32BE(this.offset);
    this.offset += 4;
    return v;
  }

  uint(): number {
    this.need(4, 'unsigned int');
    const v = this.buf.readUInt32BE(this.offset);
    this.offset += 4;
    return v;
  }

  hyper(): bigint {
    this.need(8, 'hyper');
    const v = this.buf.readBigInt64BE(this.offset);
    this.offset += 8;
    return v;
  }

  uhyper(): bigint {
    this.need(8, 'unsigned hyper');
    const v = this.buf.readBigUInt64BE(this.offset);
    this.offset += 8;
    return v;
  }

  bool(): boolean {
    // libvirt's xdr_bool takes any non-zero word as true.
    return this.uint() !== 0;
  }

  double(): number {
    this.need(8, 'double');
    const v = this.buf.readDoubleBE(this.offset);
    this.offset += 8;
    return v;
  }

  float(): number {
    this.need(4, 'float');
    const v = this.buf.readFloatBE(this.offset);
    this.offset += 4;
    return v;
  }

  string(max = 0xffffffff): string {
    const len = this.uint();
    if (len > max) throw new XdrError(`XDR string of ${len} bytes exceeds its limit of ${max}`);
    this.need(len + pad4(len), 'string bytes');
    // Buffer#toString keeps a leading U+FEFF (TextDecoder would drop it) and replaces invalid
    // UTF-8 with U+FFFD, as libvirt's C strings may hold any bytes.
    const s = this.buf.toString('utf8', this.offset, this.offset + len);
    this.offset += len + pad4(len);
    return s;
  }

  opaque(max = 0xffffffff): Buffer {
    const len = this.uint();
    if (len > max) throw new XdrError(`XDR opaque of ${len} bytes exceeds its limit of ${max}`);
    return this.fixedOpaque(len);
  }

  /** A copy, so a decoded value never pins the whole receive buffer. */
  fixedOpaque(n: number): Buffer {
    this.need(n + pad4(n), 'opaque bytes');
    const out = Buffer.from(this.buf.subarray(this.offset, this.offset + n));
    this.offset += n + pad4(n);
    return out;
  }

  /**
   * An array count, checked against the declared limit and against the bytes left (every
   * element takes at least 4 bytes), so a hostile count cannot make us allocate.
   */
  count(max: number, minItemSize = 4): number {
    const n = this.uint();
    if (n > max) throw new XdrError(`XDR array of ${n} items exceeds its limit of ${max}`);
    if (n * minItemSize > this.remaining) {
      throw new XdrError(`XDR array of ${n} items cannot fit in the ${this.remaining} bytes left`);
    }
    return n;
  }

  /** Rejects bytes after the decoded value: libvirt ignores them, so we must not produce them. */
  expectEnd(what: string): void {
    if (this.offset !== this.end) {
      throw new XdrError(`${this.end - this.offset} unexpected bytes after ${what}`);
    }
  }
}
