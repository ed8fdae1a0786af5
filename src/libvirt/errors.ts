// The libvirt layer's failures, one class per family. Each carries its code and the facts of
// the failure (libvirt's numbers, the procedure); the kind comes from the classification
// table through Kvm2Error. Modelled on undici's errors.js: callers branch on `code`/`kind`.
import { libvirtErrorKind } from '../errors/classify.js';
import { Kvm2Error, type Kvm2ErrorOptions } from '../errors/error.js';
import { VirErr } from './error-codes.js';

/** An error the daemon sent (`remote_error`), with libvirt's own numbers kept. */
export class LibvirtError extends Kvm2Error {
  declare readonly code: 'ERR_LIBVIRT';
  override name = 'LibvirtError';

  constructor(
    message: string,
    /** virErrorNumber, e.g. 42 VIR_ERR_NO_DOMAIN */
    readonly libvirtCode: number,
    /** virErrorDomain, e.g. 10 VIR_FROM_QEMU */
    readonly libvirtDomain: number,
    readonly level: number,
    /** The procedure whose reply carried the error, e.g. DomainLookupByName. */
    readonly procedure: string,
    readonly int1 = -1,
  ) {
    super('ERR_LIBVIRT', message, { kind: libvirtErrorKind(libvirtCode, int1) });
  }
}

/**
 * The daemon or its driver does not take this call or these flags (an older libvirt, the test
 * driver): the caller may ask again the plainer way.
 */
export function isUnsupportedCall(err: unknown): boolean {
  return (
    err instanceof LibvirtError &&
    (err.libvirtCode === VirErr.NO_SUPPORT ||
      err.libvirtCode === VirErr.INVALID_ARG ||
      err.libvirtCode === VirErr.ARGUMENT_UNSUPPORTED ||
      err.libvirtCode === VirErr.OPERATION_UNSUPPORTED)
  );
}

/** `err` is libvirt's error number `code` (a VirErr), as the daemon sent it. */
export function isLibvirtCode(err: unknown, code: number): err is LibvirtError {
  return err instanceof LibvirtError && err.libvirtCode === code;
}

/** A call's own signal fired, or its budget ran out, while it was in flight. */
export class CallAbortedError extends Kvm2Error {
  declare readonly code: 'ERR_LIBVIRT_CALL_ABORTED' | 'ERR_LIBVIRT_CALL_TIMEOUT';
  override name = 'CallAbortedError';

  constructor(
    readonly procedure: string,
    readonly timedOut: boolean,
    options?: Kvm2ErrorOptions,
  ) {
    super(
      timedOut ? 'ERR_LIBVIRT_CALL_TIMEOUT' : 'ERR_LIBVIRT_CALL_ABORTED',
      timedOut
        ? `libvirt call ${procedure} ran out of its time budget`
        : `libvirt call ${procedure} was aborted`,
      options,
    );
  }
}

/**
 * A stream's daemon side moved no bytes for longer than the stall limit while kvm2 waited on
 * it (a hung iohelper on a stuck NFS pool, say): keepalive still answers, so nothing else would
 * end the transfer. The link is killed, as for an abandoned call.
 */
export class StreamStalledError extends Kvm2Error {
  declare readonly code: 'ERR_LIBVIRT_STREAM_STALLED';
  override name = 'StreamStalledError';

  constructor(
    readonly procedure: string,
    readonly stallMs: number,
    options?: Kvm2ErrorOptions,
  ) {
    super(
      'ERR_LIBVIRT_STREAM_STALLED',
      `libvirt stream ${procedure} moved no bytes for ${stallMs} ms`,
      options,
    );
  }
}

/**
 * The link under a call died (another call was abandoned, the peer closed, keepalive gave up,
 * a frame could not be decoded). The call may or may not have run on the host.
 */
export class LinkInterruptedError extends Kvm2Error {
  declare readonly code: 'ERR_LIBVIRT_INTERRUPTED';
  override name = 'LinkInterruptedError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_LIBVIRT_INTERRUPTED', message, options);
  }
}

/** The peer broke the wire protocol: a frame we cannot decode or should never receive. */
export class ProtocolError extends Kvm2Error {
  declare readonly code: 'ERR_LIBVIRT_PROTOCOL';
  override name = 'ProtocolError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_LIBVIRT_PROTOCOL', message, options);
  }
}

/** The connection was closed by us (close/destroy) before or while the call ran. */
export class LinkClosedError extends Kvm2Error {
  declare readonly code: 'ERR_LIBVIRT_CLOSED';
  override name = 'LinkClosedError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_LIBVIRT_CLOSED', message, options);
  }
}

/** A call's arguments do not fit the procedure's layout (a string over its limit, say). */
export class InvalidArgumentError extends Kvm2Error {
  declare readonly code: 'ERR_LIBVIRT_ARGUMENT';
  override name = 'InvalidArgumentError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_LIBVIRT_ARGUMENT', message, options);
  }
}
