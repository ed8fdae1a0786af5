// delete (SPEC §3): idempotent at every step. destroy if active → undefine with NVRAM, managed
// save and snapshot metadata (falling back when a flag is unsupported) → delete the overlay
// and the seed. "Already gone" counts only for libvirt's no-domain / no-volume errors; a
// transport error propagates (transient), never "gone". The base image stays. An inactive
// pool is refused (transient) before the guest is touched. With the domain gone, a volume
// named after it that another domain's disk uses (the domain renamed by hand, a foreign one
// that attached it) is kept, with a warning.
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { VirErr } from '../../libvirt/error-codes.js';
import { isUnsupportedCall, LibvirtError } from '../../libvirt/errors.js';
import {
  DomainDestroyFlags,
  DomainLookupByName,
  DomainUndefine,
  DomainUndefineFlags,
  StoragePoolIsActive,
  StoragePoolLookupByName,
  type NonnullDomain,
  type NonnullStoragePool,
} from '../../libvirt/protocol.gen.js';
import { Kvm2Error } from '../../errors/error.js';
import type { ProviderContext } from '../core/host-context.js';
import {
  instanceLockName,
  overlayVolumeName,
  parseInstanceId,
  seedVolumeName,
} from '../core/ids.js';
import { requireOwned } from '../core/instance.js';
import { asOperationError, isNoDomain } from '../core/not-found.js';
import { inSpan } from '../core/telemetry.js';
import { deleteVolume, domainsUsing, lookupVolume } from '../image/volumes.js';

const UNDEFINE_MANAGED_SAVE = 1;
const UNDEFINE_SNAPSHOTS_METADATA = 2;
const UNDEFINE_NVRAM = 4;
// Tried in order: a hypervisor that refuses a flag gets the next, smaller set.
const UNDEFINE_FLAG_SETS = [
  UNDEFINE_NVRAM | UNDEFINE_MANAGED_SAVE | UNDEFINE_SNAPSHOTS_METADATA,
  UNDEFINE_NVRAM | UNDEFINE_MANAGED_SAVE,
  UNDEFINE_NVRAM,
] as const;

interface Io {
  readonly signal: AbortSignal;
}

export async function deleteInstance(
  ctx: ProviderContext,
  id: string,
  options?: { signal?: AbortSignal | undefined },
): Promise<void> {
  const { host, name } = parseInstanceId(id);
  if (!ctx.config.hosts.some((h) => h.name === host)) {
    // The host left the configuration: nothing kvm2 can reach is left to delete.
    ctx.logger.warn({ instance: id, host }, 'delete: host is not configured; nothing to do');
    return;
  }
  await inSpan(ctx, 'provider.delete', { 'kvm2.instance': id }, () =>
    ctx.locks.withLock(
      instanceLockName(id),
      (signal) => removeLocked(ctx, host, name, { signal }),
      {
        signal: options?.signal,
      },
    ),
  );
}

/** delete's steps, for a caller that holds the instance's lock (create undoing its own). */
export async function removeLocked(
  ctx: ProviderContext,
  host: string,
  name: string,
  io: Io,
): Promise<void> {
  const conn = await ctx.hosts.shared(host, io);
  const poolName = ctx.config.hosts.find((h) => h.name === host)?.pool ?? 'default';
  // The pool is looked up alongside the domain (pipelined on the link): both only read.
  const poolLookup = activePool(conn, host, poolName, io);
  poolLookup.catch(() => undefined); // awaited below; not unhandled meanwhile
  let dom: NonnullDomain | null = null;
  try {
    dom = (await conn.call(DomainLookupByName, { name }, io)).dom;
    await requireOwned(conn, host, dom, io); // a foreign domain: permanent, untouched
  } catch (err) {
    if (!isNoDomain(err)) throw asOperationError(err);
    dom = null; // gone, or went between the lookup and the metadata read
  }
  let pool: NonnullStoragePool;
  try {
    // Before the guest is destroyed: a delete that could not go on would leave it stopped.
    pool = await poolLookup;
  } catch (err) {
    throw asOperationError(err);
  }
  // Disks go before the definition: a delete cut short leaves an owned domain, which a later
  // create with another uid refuses, never an orphan overlay that it could boot from.
  if (dom !== null) await destroyIfActive(conn, dom, io);
  try {
    const names = [overlayVolumeName(name), seedVolumeName(name)];
    const found = (
      await Promise.all(names.map((volName) => lookupVolume(conn, pool, volName, io.signal)))
    ).filter((vol) => vol !== undefined);
    // With the domain gone, its volumes' names are all that ties them to it.
    const users = dom === null ? await domainsUsing(conn, poolName, found, io.signal) : [];
    await Promise.all(
      found.map(async (vol, i) => {
        const domains = users[i] ?? [];
        if (domains.length > 0) {
          ctx.logger.warn(
            { host, instance: `${host}/${name}`, volume: vol.name, domains },
            'delete: the domain is gone but another domain uses its volume; kept',
          );
          return;
        }
        await deleteVolume(conn, vol, io.signal);
      }),
    );
    if (dom !== null) await undefine(conn, dom, io);
  } catch (err) {
    throw asOperationError(await poolStoppedMeanwhile(conn, host, poolName, pool, err, io));
  }
}

/**
 * The host's pool, or ERR_POOL_INACTIVE (transient) when it is defined but not started: libvirt
 * refuses every volume call with OPERATION_INVALID, which is permanent in general, while this
 * is a host condition an operator clears (`virsh pool-start`; the health check reports it as
 * pool_inactive).
 */
async function activePool(
  conn: LibvirtConnection,
  host: string,
  poolName: string,
  io: Io,
): Promise<NonnullStoragePool> {
  const { pool } = await conn.call(StoragePoolLookupByName, { name: poolName }, io);
  const { active } = await conn.call(StoragePoolIsActive, { pool }, io);
  if (active === 0) throw poolInactive(host, poolName);
  return pool;
}

/** `err`, or ERR_POOL_INACTIVE when the refusal came from the pool being stopped meanwhile. */
async function poolStoppedMeanwhile(
  conn: LibvirtConnection,
  host: string,
  poolName: string,
  pool: NonnullStoragePool,
  err: unknown,
  io: Io,
): Promise<unknown> {
  if (!(err instanceof LibvirtError) || err.libvirtCode !== VirErr.OPERATION_INVALID) return err;
  const { active } = await conn
    .call(StoragePoolIsActive, { pool }, io)
    .catch(() => ({ active: 1 }));
  return active === 0 ? poolInactive(host, poolName, err) : err;
}

function poolInactive(host: string, poolName: string, cause?: unknown): Kvm2Error {
  return new Kvm2Error(
    'ERR_POOL_INACTIVE',
    `storage pool '${poolName}' on host '${host}' is not active: the delete goes on once it is started (virsh pool-start ${poolName})`,
    { cause },
  );
}

async function destroyIfActive(conn: LibvirtConnection, dom: NonnullDomain, io: Io): Promise<void> {
  try {
    await conn.call(DomainDestroyFlags, { dom, flags: 0 }, io);
  } catch (err) {
    // Not running (55) or already gone (42): the state we want.
    if (err instanceof LibvirtError && err.libvirtCode === VirErr.OPERATION_INVALID) return;
    if (isNoDomain(err)) return;
    throw err;
  }
}

/** Undefines `dom` with its NVRAM, managed save and snapshot metadata (fallbacks as supported). */
export async function undefine(conn: LibvirtConnection, dom: NonnullDomain, io: Io): Promise<void> {
  for (const flags of UNDEFINE_FLAG_SETS) {
    try {
      await conn.call(DomainUndefineFlags, { dom, flags }, io);
      return;
    } catch (err) {
      if (isNoDomain(err)) return;
      if (!isUnsupportedCall(err)) throw err;
    }
  }
  try {
    await conn.call(DomainUndefine, { dom }, io);
  } catch (err) {
    if (!isNoDomain(err)) throw err;
  }
}
