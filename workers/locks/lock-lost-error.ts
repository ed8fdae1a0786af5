// The one failure a held lock adds: it was lost while its holder ran. Transient, so the queue
// retries the job; the next attempt takes the lock afresh.
import { Kvm2Error, type Kvm2ErrorOptions } from '../../src/errors/error.js';

/**
 * Why a lease was lost: its key vanished (`expired`, renewal came too late or someone deleted
 * it), another holder's token is in it (`taken`), or Redis could not be reached before the TTL
 * ran out (`unrenewed`, the key may still hold our token but can no longer be trusted).
 */
export type LockLossReason = 'expired' | 'taken' | 'unrenewed';

const EXPLANATIONS: Readonly<Record<LockLossReason, string>> = Object.freeze({
  expired: 'its key is gone',
  taken: 'its key holds another holder’s token',
  unrenewed: 'Redis could not renew it before its TTL ran out',
});

export class LockLostError extends Kvm2Error {
  declare readonly code: 'ERR_LOCK_LOST';
  override name = 'LockLostError';

  constructor(
    readonly key: string,
    readonly reason: LockLossReason,
    options?: Kvm2ErrorOptions,
  ) {
    super('ERR_LOCK_LOST', `lock on ${key} lost: ${EXPLANATIONS[reason]}`, options);
  }
}
