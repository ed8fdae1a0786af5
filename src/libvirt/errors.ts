// Every failure of the libvirt layer, one class per family, each with a stable `code` and a
// `kind`. Modelled on undici's errors.js: callers branch on `code`/`kind`, never on text.
import type { ErrorKind } from '../errors/kind.js';
import { libvirtErrorKind } from '../errors/classify.js';

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
