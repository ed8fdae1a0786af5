// A dial that failed: where (the stage) and why (the reason), for retries and health reports.
// The kind is the dial rows' of the classification table, by stage and reason, nothing else.
import { dialErrorKind } from '../../errors/classify.js';
import { Kvm2Error, type Kvm2ErrorOptions } from '../../errors/error.js';

/** Where a dial failed. `socket` is the local UNIX-socket connect; the rest are SPEC §4's. */
export type DialStage =
  'resolve' | 'tcp' | 'handshake' | 'hostkey' | 'auth' | 'forward' | 'socket' | 'open';

/** The more precise reason inside a stage, for health reports (SPEC §3 check reasons). */
export type DialReason =
  | 'host_key_unknown'
  | 'host_key_mismatch'
  | 'auth_failed'
  /** The client key file could not be read or parsed now (mid-rotation, say): read again next dial. */
  | 'key_unreadable'
  /** The known_hosts file could not be read now: the host key is neither known nor refused. */
  | 'known_hosts_unreadable'
  | 'unreachable'
  | 'socket_unavailable'
  /** sshd will not forward to the socket: "administratively prohibited" (ssh2 reason 1). */
  | 'forward_prohibited'
  | 'protocol_error'
  | 'timeout'
  | 'aborted';

export class DialError extends Kvm2Error {
  declare readonly code: 'ERR_LIBVIRT_DIAL';
  override name = 'DialError';

  constructor(
    message: string,
    readonly stage: DialStage,
    readonly host: string,
    readonly reason: DialReason,
    options?: Kvm2ErrorOptions,
  ) {
    super('ERR_LIBVIRT_DIAL', message, {
      ...options,
      kind: dialErrorKind(stage, reason, options?.cause),
    });
  }
}
