// The protocol tests' shared parts: hex fixtures written one field at a time, encoding and
// decoding through the generated codecs, and every Procedure descriptor protocol.gen.ts exports.
import type { Procedure } from '../../src/libvirt/procedure.js';
import * as gen from '../../src/libvirt/protocol.gen.js';
import { XdrReader, XdrWriter } from '../../src/libvirt/xdr.js';

/** Hex with one field per argument, so each fixture line can carry its own comment. */
export function hex(...fields: string[]): Buffer {
  return Buffer.from(fields.join('').replace(/\s+/g, ''), 'hex');
}

export function encode<A>(p: Procedure<A, unknown>, args: A): Buffer {
  const w = new XdrWriter(16);
  p.encode(w, args);
  return Buffer.from(w.finish());
}

export function bytesOf<T>(enc: (w: XdrWriter, v: T) => void, value: T): Buffer {
  const w = new XdrWriter(16);
  enc(w, value);
  return Buffer.from(w.finish());
}

export function decodeAll<T>(decode: (r: XdrReader) => T, buf: Buffer): T {
  const r = new XdrReader(buf);
  const v = decode(r);
  r.expectEnd('the value');
  return v;
}

export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

function isProcedure(v: unknown): v is Procedure<unknown, unknown> {
  return typeof v === 'object' && v !== null && 'proc' in v && 'encode' in v && 'decode' in v;
}

/** Every Procedure descriptor the generated module exports. */
export const procedures = Object.values(gen as Record<string, unknown>).filter(isProcedure);

export const uuidA = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
