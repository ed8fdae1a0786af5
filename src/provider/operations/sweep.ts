// The orphan-volume sweep GC runs per host (SPEC §8): overlays `kvm2-<name>.qcow2` and seeds
// `kvm2-<name>-seed.iso` whose domain is gone and that last changed longer ago than the grace
// period. A volume is deleted only under the instance lock (the key create and delete take),
// after seeing again that the domain is absent and the volume old, so a create in progress is
// never raced. A volume some other domain's disk names (a kvm2 domain renamed by hand, a
// foreign domain that attached it) is in use, whatever its name says: kept, and reported. A
// volume that cannot be dated is kept. A failure on one volume is reported and the sweep goes
// on; a host or pool that cannot be listed fails the sweep (never act on a partial view).
import type { LibvirtConnection } from '../../libvirt/connection.js';
import {
  DomainLookupByName,
  StoragePoolListAllVolumes,
  StoragePoolLookupByName,
  StorageVolGetXMLDesc,
  type NonnullStoragePool,
  type NonnullStorageVol,
} from '../../libvirt/protocol.gen.js';
import { hostConfig, type ProviderContext } from '../core/host-context.js';
import { Kvm2Error } from '../../errors/error.js';
import { formatInstanceId, instanceLockName, instanceVolumeOwner } from '../core/ids.js';
import { deleteVolume, domainsUsing, lookupVolume } from '../image/volumes.js';
import { asOperationError, isNoDomain } from '../core/not-found.js';
import { inSpan } from '../core/telemetry.js';
import { XmlError, firstChild, readXml, type XmlElement } from '../xml/types.js';

export interface SweepOptions {
  /** The grace period: only volumes last changed longer ago than this are deleted. */
  readonly olderThanMs: number;
  /** The sweep's clock, ms since the epoch; Date.now() when undefined. */
  readonly now?: number | undefined;
  readonly signal?: AbortSignal | undefined;
}

export interface SweepReport {
  readonly host: string;
  /** Volumes deleted, sorted. */
  readonly removed: string[];
  /** Orphan candidates left in place because another domain uses them or something failed,
   *  each with why. */
  readonly skipped: { volume: string; reason: string }[];
  /** kvm2 instance volumes left in place: their domain exists, or they are young or undatable. */
  readonly kept: number;
}

/** The report as the sweep fills it in. */
interface Tally {
  readonly removed: string[];
  readonly skipped: { volume: string; reason: string }[];
  kept: number;
}

/**
 * How long a volume waits for its instance lock before it is skipped as busy. A holder is a
 * create or delete of that name at work: not an orphan now, and the next sweep looks again.
 */
const LOCK_WAIT_MS = 10_000;

interface Io {
  readonly signal?: AbortSignal | undefined;
}

interface Sweep {
  readonly ctx: ProviderContext;
  readonly host: string;
  readonly conn: LibvirtConnection;
  readonly pool: NonnullStoragePool;
  readonly poolName: string;
  readonly report: Tally;
  /** True when a volume last changed at `changedAt` is past the grace period. */
  readonly isOld: (changedAt: number | undefined) => boolean;
  readonly signal?: AbortSignal | undefined;
}

export async function sweepOrphanVolumes(
  ctx: ProviderContext,
  host: string,
  options: SweepOptions,
): Promise<SweepReport> {
  const { olderThanMs, signal } = options;
  const now = options.now ?? Date.now();
  if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
    throw new Kvm2Error(
      'ERR_INVALID_REQUEST',
      `sweep: olderThanMs must be a non-negative number of milliseconds, got ${olderThanMs}`,
    );
  }
  if (!Number.isFinite(now)) {
    throw new Kvm2Error('ERR_INVALID_REQUEST', `sweep: now must be finite`);
  }
  const poolName = hostConfig(ctx, host).pool;
  signal?.throwIfAborted();
  return inSpan(ctx, 'provider.sweep', { 'kvm2.host': host }, async (span) => {
    const io = { signal };
    let conn: LibvirtConnection;
    let pool: NonnullStoragePool;
    let vols: NonnullStorageVol[];
    try {
      conn = await ctx.hosts.shared(host, io);
      ({ pool } = await conn.call(StoragePoolLookupByName, { name: poolName }, io));
      ({ vols } = await conn.call(
        StoragePoolListAllVolumes,
        { pool, needResults: 1, flags: 0 },
        io,
      ));
    } catch (err) {
      throw asOperationError(err);
    }
    const report: Tally = { removed: [], skipped: [], kept: 0 };
    const isOld = (changedAt: number | undefined): boolean =>
      changedAt !== undefined && now - changedAt > olderThanMs;
    const sweep: Sweep = {
      ctx,
      host,
      conn,
      pool,
      poolName,
      report,
      isOld,
      signal,
    };
    for (const [name, volumes] of volumesByInstance(vols)) {
      signal?.throwIfAborted();
      await sweepInstance(sweep, name, volumes);
    }
    report.removed.sort();
    const counts = {
      removed: report.removed.length,
      skipped: report.skipped.length,
      kept: report.kept,
    };
    span.setAttributes({
      'kvm2.sweep.removed': counts.removed,
      'kvm2.sweep.skipped': counts.skipped,
      'kvm2.sweep.kept': counts.kept,
    });
    ctx.logger.info({ host, ...counts }, 'sweep: orphan volumes');
    return { host, ...report };
  });
}

/** kvm2's instance volumes by instance name, in name order; every other volume left out. */
function volumesByInstance(vols: readonly NonnullStorageVol[]): Map<string, NonnullStorageVol[]> {
  const out = new Map<string, NonnullStorageVol[]>();
  const sorted = [...vols].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const vol of sorted) {
    const owner = instanceVolumeOwner(vol.name);
    if (owner === undefined) continue;
    const list = out.get(owner.name) ?? [];
    list.push(vol);
    out.set(owner.name, list);
  }
  return out;
}

/** One instance name's overlay and seed: dated outside the lock, deleted inside it. */
async function sweepInstance(
  sweep: Sweep,
  name: string,
  volumes: readonly NonnullStorageVol[],
): Promise<void> {
  const { conn, report, signal } = sweep;
  const io = { signal };
  try {
    // Ours or foreign, a domain of that name makes its volumes not orphans.
    if (await domainExists(conn, name, io)) {
      report.kept += volumes.length;
      return;
    }
  } catch (err) {
    for (const vol of volumes) skip(sweep, vol.name, err);
    return;
  }
  const old: string[] = [];
  for (const vol of volumes) {
    try {
      if (sweep.isOld(await volumeChangedAt(conn, vol, io))) old.push(vol.name);
      else report.kept += 1;
    } catch (err) {
      skip(sweep, vol.name, err);
    }
  }
  if (old.length === 0) return;
  const id = formatInstanceId(sweep.host, name);
  try {
    await withInstanceLock(sweep.ctx, id, signal, (lockSignal) =>
      removeLocked(sweep, name, old, lockSignal),
    );
  } catch (err) {
    for (const volume of old) skip(sweep, volume, err);
  }
}

/**
 * Under the instance lock: the domain still absent, each volume still there and still old
 * (a create that ran meanwhile rebuilt the seed, and the sweep's `now` predates it).
 */
async function removeLocked(
  sweep: Sweep,
  name: string,
  volumes: readonly string[],
  signal: AbortSignal,
): Promise<void> {
  const { conn, pool, report } = sweep;
  if (await domainExists(conn, name, { signal })) {
    report.kept += volumes.length;
    return;
  }
  const candidates: NonnullStorageVol[] = [];
  for (const volume of volumes) {
    try {
      const vol = await lookupVolume(conn, pool, volume, signal);
      if (vol === undefined) continue; // deleted meanwhile: nothing left to count
      if (sweep.isOld(await volumeChangedAt(conn, vol, { signal }))) candidates.push(vol);
      else report.kept += 1;
    } catch (err) {
      skip(sweep, volume, err);
    }
  }
  let users: string[][];
  try {
    // Listed under this candidate's lock: a domain that attached the volume since is seen.
    users = await domainsUsing(conn, sweep.poolName, candidates, signal);
  } catch (err) {
    for (const vol of candidates) skip(sweep, vol.name, err);
    return;
  }
  for (const [i, vol] of candidates.entries()) {
    const usedBy = users[i] ?? [];
    if (usedBy.length > 0) {
      keepInUse(sweep, vol.name, usedBy);
      continue;
    }
    try {
      if (await deleteVolume(conn, vol, signal)) report.removed.push(vol.name);
    } catch (err) {
      skip(sweep, vol.name, err);
    }
  }
}

async function domainExists(conn: LibvirtConnection, name: string, io: Io): Promise<boolean> {
  try {
    await conn.call(DomainLookupByName, { name }, io);
    return true;
  } catch (err) {
    if (isNoDomain(err)) return false;
    throw err;
  }
}

/**
 * Runs `fn` holding `instance:<id>`, waiting at most LOCK_WAIT_MS for it (a worker's locks
 * throw at once when the key is busy; in-process ones would wait out a whole create).
 */
async function withInstanceLock(
  ctx: ProviderContext,
  id: string,
  signal: AbortSignal | undefined,
  fn: (signal: AbortSignal) => Promise<void>,
): Promise<void> {
  signal?.throwIfAborted();
  const waiting = new AbortController();
  const onAbort = (): void => waiting.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    const message = `instance lock '${id}' still busy after ${LOCK_WAIT_MS} ms`;
    waiting.abort(new Kvm2Error('ERR_LOCK_BUSY', message));
  }, LOCK_WAIT_MS);
  try {
    await ctx.locks.withLock(
      instanceLockName(id),
      (lockSignal) => {
        clearTimeout(timer); // held: the bound was on the wait only
        return fn(lockSignal);
      },
      { signal: waiting.signal },
    );
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** Records a volume another domain uses as skipped, naming the domains. */
function keepInUse(sweep: Sweep, volume: string, domains: readonly string[]): void {
  const reason = `in use by domain ${domains.map((d) => `'${d}'`).join(', ')}`;
  sweep.report.skipped.push({ volume, reason });
  sweep.ctx.logger.warn(
    { host: sweep.host, volume, domains },
    'sweep: volume named as an orphan is in use by another domain; kept',
  );
}

/** Records a volume as skipped; a cancelled sweep ends instead. */
function skip(sweep: Sweep, volume: string, err: unknown): void {
  if (sweep.signal?.aborted === true) throw err;
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : String(err);
  const reason = typeof code === 'string' ? `${code}: ${message}` : message;
  sweep.report.skipped.push({ volume, reason });
  sweep.ctx.logger.warn({ host: sweep.host, volume, reason }, 'sweep: volume skipped');
}

/** When the volume last changed; libvirt refreshes it (stat) before describing it. */
async function volumeChangedAt(
  conn: LibvirtConnection,
  vol: NonnullStorageVol,
  io: Io,
): Promise<number | undefined> {
  const { xml } = await conn.call(StorageVolGetXMLDesc, { vol, flags: 0 }, io);
  return targetChangedAt(firstChild(readVolumeXml(xml), 'target'));
}

function readVolumeXml(volumeXml: string): XmlElement {
  const root = readXml(volumeXml);
  if (root.name !== 'volume') {
    throw new XmlError('ERR_XML_MALFORMED', `expected a <volume> document, got <${root.name}>`);
  }
  return root;
}

/**
 * When a volume last changed, in ms since the epoch: the later of the mtime and ctime in
 * `<target><timestamps>` (`seconds.nanoseconds`, https://libvirt.org/formatstorage.html#
 * storage-volume-target-elements). ctime counts too: libvirt relabels (chowns) a domain's
 * disks when it stops. Only file-backed volumes have timestamps; undefined without one.
 */
export function parseVolumeChangedAt(volumeXml: string): number | undefined {
  return targetChangedAt(firstChild(readVolumeXml(volumeXml), 'target'));
}

function targetChangedAt(target: XmlElement | undefined): number | undefined {
  const timestamps = target === undefined ? undefined : firstChild(target, 'timestamps');
  if (timestamps === undefined) return undefined;
  let latest: number | undefined;
  for (const field of ['mtime', 'ctime']) {
    const text = firstChild(timestamps, field)?.text.trim();
    const at = text === undefined ? undefined : timestampMs(text);
    if (at !== undefined && (latest === undefined || at > latest)) latest = at;
  }
  return latest;
}

/** `seconds[.nanoseconds]` to ms; undefined for anything else and for 0 (libvirt's "unknown"). */
function timestampMs(text: string): number | undefined {
  const match = /^(\d{1,15})(?:\.(\d{1,9}))?$/.exec(text);
  if (match === null) return undefined;
  const seconds = Number(match[1]);
  if (seconds === 0) return undefined;
  const nanos = Number((match[2] ?? '').padEnd(9, '0'));
  return seconds * 1000 + Math.floor(nanos / 1e6);
}
