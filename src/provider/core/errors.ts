// The provider's own failures: one class, a stable code per cause, the kind the queue acts on.
// Messages name fields, hosts and volumes; never user-data.
import type { ErrorKind } from '../../errors/kind.js';

export type ProviderErrorCode =
  | 'ERR_INVALID_REQUEST'
  | 'ERR_UNKNOWN_HOST'
  | 'ERR_UNKNOWN_IMAGE'
  | 'ERR_NO_HOST_IN_ZONE'
  | 'ERR_FOREIGN_DOMAIN'
  | 'ERR_UID_CONFLICT'
  | 'ERR_FOREIGN_VOLUME'
  | 'ERR_POOL_FULL'
  | 'ERR_DOMAIN_NOT_RUNNING'
  | 'ERR_DOMAIN_DIED'
  | 'ERR_SERIAL_LOG'
  | 'ERR_NOT_FOUND'
  | 'ERR_HOST_OBJECT_MISSING'
  | 'ERR_IMAGE_HTTP'
  | 'ERR_IMAGE_EMPTY'
  | 'ERR_IMAGE_DIGEST_MISMATCH'
  | 'ERR_IMAGE_TOO_LARGE'
  | 'ERR_LOCK_BUSY'
  | 'ERR_PARTIAL_VIEW';

export class ProviderError extends Error {
  override name = 'ProviderError';

  constructor(
    readonly code: ProviderErrorCode,
    readonly kind: ErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
