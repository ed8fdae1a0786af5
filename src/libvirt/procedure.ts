// What the RPC engine needs to know about one procedure. The generated protocol file
// (protocol.gen.ts) declares one of these per procedure kvm2 uses.
import type { XdrReader, XdrWriter } from './xdr.js';

export interface Procedure<Args, Ret> {
  /** PascalCase name, e.g. DomainDefineXMLFlags; spans are named `kvm2.<name>`. */
  readonly name: string;
  readonly program: number;
  readonly version: number;
  readonly proc: number;
  readonly encode: (w: XdrWriter, args: Args) => void;
  readonly decode: (r: XdrReader) => Ret;
  /** Procedures that open a data stream after their reply (@readstream / @writestream). */
  readonly stream?: 'read' | 'write';
}

export type ArgsOf<P> = P extends Procedure<infer A, unknown> ? A : never;
export type RetOf<P> = P extends Procedure<unknown, infer R> ? R : never;
