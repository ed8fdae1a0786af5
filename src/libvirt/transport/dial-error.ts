// A dial that failed: where (the stage) and why (the reason), for retries and health reports.
import { dialErrorKind } from '../../errors/classify.js';
import type { ErrorKind } from '../../errors/kind.js';

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
