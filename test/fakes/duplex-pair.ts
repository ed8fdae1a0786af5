// Two connected in-memory Duplex ends (node:stream's duplexPair arrives only in Node 22.6):
// what one end writes, the other reads. For feeding the RPC engine bytes no daemon would send.
import { Duplex } from 'node:stream';

class End extends Duplex {
  peer!: End;
  override _read(): void {}
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.peer.push(chunk);
    cb();
  }
  override _final(cb: (e?: Error | null) => void): void {
    this.peer.push(null);
    cb();
  }
}

export function duplexPair(): [Duplex, Duplex] {
  const a = new End();
  const b = new End();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
