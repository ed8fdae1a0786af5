// What libvirt's "no such …" answers mean to kvm2: only a missing domain is not_found (the
// instance is gone); a missing pool, network or volume met inside an operation is something
// else, and must not let a delete count as done.
import { VirErr } from '../../libvirt/error-codes.js';
import { LibvirtError } from '../../libvirt/errors.js';
import { Kvm2Error } from '../../errors/error.js';

/** True for libvirt's "no such domain": the only error that means not_found for a domain. */
export function isNoDomain(err: unknown): boolean {
  return err instanceof LibvirtError && err.libvirtCode === VirErr.NO_DOMAIN;
}

/**
 * At an operation's boundary: libvirt's "no such pool / volume / network" must not reach the
 * queue as not_found, which only a missing domain means (a delete would count it as success
 * and leak the rest). A missing pool or network is configuration: permanent; anything else
 * that vanished under us (a volume): transient, the retry looks again.
 */
export function asOperationError(err: unknown): unknown {
  if (!(err instanceof LibvirtError) || err.kind !== 'not_found' || isNoDomain(err)) return err;
  const permanent =
    err.libvirtCode === VirErr.NO_STORAGE_POOL || err.libvirtCode === VirErr.NO_NETWORK;
  return new Kvm2Error(
    permanent ? 'ERR_HOST_OBJECT_MISSING' : 'ERR_HOST_OBJECT_VANISHED',
    `${err.procedure}: ${err.message}`,
    { cause: err },
  );
}

export function isNoVolume(err: unknown): boolean {
  return err instanceof LibvirtError && err.libvirtCode === VirErr.NO_STORAGE_VOL;
}
