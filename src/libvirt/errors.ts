// Every failure of the libvirt layer, one class per family, each with a stable `code` and a
// `kind`. Modelled on undici's errors.js: callers branch on `code`/`kind`, never on text.
import type { ErrorKind } from '../error-kind.js';
import { dialErrorKind } from '../classify.js';
import { libvirtErrorKind } from './error-codes.js';

/** An error the daemon sent (`remote_error`), with libvirt's own numbers kept. */
export class LibvirtError extends Error {
  readonly code = 'ERR_LIBVIRT';
  override name = 'LibvirtError';
  readonly kind: ErrorKind;

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
    super(message);
    this.kind = libvirtErrorKind(libvirtCode, int1);
  }
}

/** Where a dial failed. `socket` is the local UNIX-socket connect; the rest are SPEC §4's. */
export type DialStage =
  'resolve' | 'tcp' | 'handshake' | 'hostkey' | 'auth' | 'forward' | 'socket' | 'open';

/** The more precise reason inside a stage, for health reports (SPEC §3 check reasons). */
export type DialReason =
  | 'host_key_unknown'
  | 'host_key_mismatch'
  | 'auth_failed'
  | 'unreachable'
  | 'socket_unavailable'
  | 'protocol_error'
  | 'timeout'
  | 'aborted';

export class DialError extends Error {
  readonly code = 'ERR_LIBVIRT_DIAL';
  override name = 'DialError';
  readonly kind: ErrorKind;

  constructor(
    message: string,
    readonly stage: DialStage,
    readonly host: string,
    readonly reason: DialReason,
    options?: { cause?: unknown; kind?: ErrorKind },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    // From the classification table, so a timeout at the hostkey stage stays transient.
    this.kind = options?.kind ?? dialErrorKind(stage, reason) ?? 'transient';
  }
}

/** A call's own signal fired, or its budget ran out, while it was in flight. */
export class CallAbortedError extends Error {
  readonly code: 'ERR_LIBVIRT_CALL_ABORTED' | 'ERR_LIBVIRT_CALL_TIMEOUT';
  override name = 'CallAbortedError';
  readonly kind: ErrorKind = 'transient';

  constructor(
    readonly procedure: string,
    readonly timedOut: boolean,
    options?: { cause?: unknown },
  ) {
    super(
      timedOut
        ? `libvirt call ${procedure} ran out of its time budget`
        : `libvirt call ${procedure} was aborted`,
      options,
    );
    this.code = timedOut ? 'ERR_LIBVIRT_CALL_TIMEOUT' : 'ERR_LIBVIRT_CALL_ABORTED';
  }
}

/**
 * The link under a call died (another call was abandoned, the peer closed, keepalive gave up,
 * a frame could not be decoded). The call may or may not have run on the host.
 */
export class LinkInterruptedError extends Error {
  readonly code = 'ERR_LIBVIRT_INTERRUPTED';
  override name = 'LinkInterruptedError';
  readonly kind: ErrorKind = 'transient';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The peer broke the wire protocol: a frame we cannot decode or should never receive. */
export class ProtocolError extends Error {
  readonly code = 'ERR_LIBVIRT_PROTOCOL';
  override name = 'ProtocolError';
  readonly kind: ErrorKind = 'transient';
}

/** The connection was closed by us (close/destroy) before or while the call ran. */
export class LinkClosedError extends Error {
  readonly code = 'ERR_LIBVIRT_CLOSED';
  override name = 'LinkClosedError';
  readonly kind: ErrorKind = 'transient';
}

/** A call's arguments do not fit the procedure's layout (a string over its limit, say). */
export class InvalidArgumentError extends Error {
  readonly code = 'ERR_LIBVIRT_ARGUMENT';
  override name = 'InvalidArgumentError';
  readonly kind: ErrorKind = 'permanent';
}
