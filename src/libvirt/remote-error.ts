// The remote_error a REPLY or STREAM packet with status ERROR carries, as the error kvm2 throws:
// a LibvirtError with libvirt's code, domain and message, or a ProtocolError when the payload
// does not decode.
import { LibvirtError, ProtocolError } from './errors.js';
import { decodeRemoteError } from './protocol.gen.js';
import { XdrReader } from './xdr.js';

export function remoteErrorOf(procedure: string, payload: Buffer): Error {
  try {
    const e = decodeRemoteError(new XdrReader(payload));
    // No stack: it would only show this read loop, and "no such domain" is an everyday
    // answer whose stack capture cost showed in bench/queue's profile.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      return new LibvirtError(
        e.message ?? `libvirt error ${e.code}`,
        e.code,
        e.domain,
        e.level,
        procedure,
        e.int1,
      );
    } finally {
      Error.stackTraceLimit = limit;
    }
  } catch (err) {
    return new ProtocolError(`${procedure}: undecodable error payload: ${(err as Error).message}`);
  }
}
