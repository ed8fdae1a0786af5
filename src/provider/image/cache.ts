// Looking up the image cache, and filling it once per host and image (SPEC §5). A base is
// cached when its marker exists and holds a well-formed digest; a marker that does not, a base
// without marker, a marker without base, are debris of a fill that died, removed under the fill
// lock before the next fill. Outside the lock nothing is removed: a base without marker may be
// a fill under way in another process.
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { Kvm2Error } from '../../errors/error.js';
import { VirErr } from '../../libvirt/error-codes.js';
import { isLibvirtCode } from '../../libvirt/errors.js';
import {
  StoragePoolLookupByName,
  type NonnullStoragePool,
  type NonnullStorageVol,
} from '../../libvirt/protocol.gen.js';
import type { ProviderContext } from '../core/host-context.js';
import {
  MARKER_READ_BYTES,
  cacheEntry,
  describeBase,
  isMarkerFor,
  type BaseImage,
  type CacheEntry,
} from './base-image.js';
import { DOWNLOAD_TIMEOUTS, imageSource, probeImageSize } from './download.js';
import { fillBaseImage, refuseOverMaxSize, type DownloadProgress } from './fill.js';
import { deleteVolume, lookupVolume, readSmallVolume, refreshPool } from './volumes.js';

type Lookup =
  | { readonly cached: true; readonly base: NonnullStorageVol; readonly sha256: string }
  /** `debris`: what exists of the two names, marker first (removed in that order). */
  | { readonly cached: false; readonly debris: readonly NonnullStorageVol[] };

async function lookup(
  conn: LibvirtConnection,
  pool: NonnullStoragePool,
  entry: CacheEntry,
  signal: AbortSignal,
): Promise<Lookup> {
  const [marker, base] = await Promise.all([
    lookupVolume(conn, pool, entry.markerName, signal),
    lookupVolume(conn, pool, entry.baseName, signal),
  ]);
  if (marker !== undefined && base !== undefined) {
    const content = await readMarker(conn, marker, entry, signal);
    const sha256 = content?.toString('latin1');
    if (sha256 !== undefined && isMarkerFor(sha256, entry.image)) {
      return { cached: true, base, sha256 };
    }
  }
  return { cached: false, debris: [marker, base].filter((v) => v !== undefined) };
}

/**
 * The marker's bytes. libvirt refuses to read a volume it is still creating (OPERATION_INVALID,
 * "volume '…' is still being allocated"): a fill is writing this marker now, another create's,
 * or one whose fill lock a Redis failover lost. Not debris and not a failure of this image: a
 * busy fill (ERR_LOCK_BUSY, transient), and the retry finds the marker written.
 */
async function readMarker(
  conn: LibvirtConnection,
  marker: NonnullStorageVol,
  entry: CacheEntry,
  signal: AbortSignal,
): Promise<Buffer | undefined> {
  try {
    return await readSmallVolume(conn, marker, MARKER_READ_BYTES, signal);
  } catch (err) {
    if (!isLibvirtCode(err, VirErr.OPERATION_INVALID)) throw err;
    throw new Kvm2Error(
      'ERR_LOCK_BUSY',
      `image '${entry.imageName}': marker volume '${entry.markerName}' is still being written by a fill`,
      { cause: err },
    );
  }
}

async function lookupPool(
  conn: LibvirtConnection,
  name: string,
  signal: AbortSignal,
): Promise<NonnullStoragePool> {
  return (await conn.call(StoragePoolLookupByName, { name }, { signal })).pool;
}

/**
 * Bases this process has found complete, per host table (a Provider and its views share one).
 * A complete base stays complete: only a fill makes one, under its lock, and nothing of kvm2's
 * removes one. So its marker (an iohelper process on the daemon, ~45 ms) is read once, not
 * for every create. A base removed behind kvm2's back is forgotten by the create that finds
 * its overlay refused, or the base or its marker gone (operations/create.ts looks both up by
 * name beside its own volume calls), which then looks again: a base without its marker may be
 * another process's fill under way, and the look meets the fill lock.
 */
const completeBases = new WeakMap<ProviderContext['hosts'], Map<string, BaseImage>>();

function basesOf(ctx: ProviderContext): Map<string, BaseImage> {
  let bases = completeBases.get(ctx.hosts);
  if (bases === undefined) completeBases.set(ctx.hosts, (bases = new Map<string, BaseImage>()));
  return bases;
}

const baseKey = (host: string, imageName: string): string => `${host}\0${imageName}`;

/** The base this process found complete before, without asking the host; undefined if none. */
export function rememberedBaseImage(
  ctx: ProviderContext,
  host: string,
  imageName: string,
): BaseImage | undefined {
  return basesOf(ctx).get(baseKey(host, imageName));
}

/** Forgets a remembered base: the next lookup reads the host again. */
export function forgetBaseImage(ctx: ProviderContext, host: string, imageName: string): void {
  basesOf(ctx).delete(baseKey(host, imageName));
}

/** The cached base volume, or undefined when it is not (completely) there. Never fills. */
export async function findBaseImage(
  ctx: ProviderContext,
  host: string,
  imageName: string,
  opts: { signal?: AbortSignal | undefined },
): Promise<BaseImage | undefined> {
  const signal = opts.signal ?? new AbortController().signal;
  signal.throwIfAborted();
  const entry = cacheEntry(ctx, host, imageName);
  const conn = await ctx.hosts.shared(host, { signal });
  const pool = await lookupPool(conn, entry.poolName, signal);
  const found = await lookup(conn, pool, entry, signal);
  if (!found.cached) return undefined;
  const base = await describeBase(conn, found.base, entry, found.sha256, signal);
  basesOf(ctx).set(baseKey(host, imageName), base);
  return base;
}

export interface FillOptions {
  readonly signal?: AbortSignal | undefined;
  readonly onBytes?: DownloadProgress | undefined;
  /**
   * Runs under the fill lock once the base is known to be missing, before anything is written:
   * the pool-space precheck, given the bytes the server says the image has (0 when it does not
   * say). Throwing ends the fill with nothing made.
   */
  readonly beforeFill?: ((imageBytes: number, signal: AbortSignal) => Promise<void>) | undefined;
}

/** The cached base volume, filling it first when absent. */
export async function ensureBaseImage(
  ctx: ProviderContext,
  host: string,
  imageName: string,
  opts: FillOptions,
): Promise<BaseImage> {
  const cached = await findBaseImage(ctx, host, imageName, opts);
  return cached ?? fillBaseImageOnce(ctx, host, imageName, opts);
}

/**
 * Fills the base of a create that found it missing: the fill lock first, so a create waiting for
 * another's fill meets the busy lock at once (KeyBusyError with the job's locks), having asked
 * the image server nothing; then, holding it, whatever the previous holder left.
 */
export async function fillBaseImageOnce(
  ctx: ProviderContext,
  host: string,
  imageName: string,
  opts: FillOptions,
): Promise<BaseImage> {
  const signal = opts.signal ?? new AbortController().signal;
  const entry = cacheEntry(ctx, host, imageName);
  // One fill per host at a time (`pool:<host>`): the pool-space precheck of one image's fill
  // must see the space another image's fill is taking. Then the base volume's own lock, which
  // earlier releases take alone (keyed by the base: two image names with one digest share one
  // base and one fill).
  return ctx.locks.withLock(
    `pool:${host}`,
    (poolSignal) => fillLocked(ctx, host, imageName, entry, opts, poolSignal),
    { signal },
  );
}

async function fillLocked(
  ctx: ProviderContext,
  host: string,
  imageName: string,
  entry: CacheEntry,
  opts: FillOptions,
  signal: AbortSignal,
): Promise<BaseImage> {
  return ctx.locks.withLock(
    `image:${host}:${entry.baseName}`,
    async (lockSignal) => {
      const locked = await ctx.hosts.shared(host, { signal: lockSignal });
      const pool = await lookupPool(locked, entry.poolName, lockSignal);
      // The refresh makes libvirt list files it has not seen (a fill cut short by a daemon
      // restart), so they count as debris rather than block the create.
      await refreshPool(locked, pool, lockSignal);
      // Whoever held the lock before may have filled it.
      const again = await lookup(locked, pool, entry, lockSignal);
      if (again.cached) return describeBase(locked, again.base, entry, again.sha256, lockSignal);
      // Before the pool-space precheck: a dead fill's base counted as used would refuse every
      // create of the image on this host for good (libvirt gives the space back as it deletes).
      for (const vol of again.debris) {
        ctx.logger.warn(
          { host, image: imageName, volume: vol.name },
          'removing image cache debris',
        );
        await deleteVolume(locked, vol, lockSignal);
      }
      await opts.beforeFill?.(await probeBytes(ctx, host, entry, lockSignal), lockSignal);
      return fillBaseImage(ctx, entry, pool, lockSignal, opts.onBytes);
    },
    { signal },
  );
}

/** The size the image server gives (HEAD, else GET headers); 0 and a warning when it gives none. */
async function probeBytes(
  ctx: ProviderContext,
  host: string,
  entry: CacheEntry,
  signal: AbortSignal,
): Promise<number> {
  const src = imageSource(entry.imageName, entry.image);
  const probeSignal = AbortSignal.any([signal, AbortSignal.timeout(DOWNLOAD_TIMEOUTS.probeMs)]);
  const size = await probeImageSize(src, { signal: probeSignal });
  if (size !== undefined) {
    // Before the pool-space precheck: over maxSize is permanent whatever the pool holds.
    refuseOverMaxSize(entry, src, size, `says it has ${size} bytes`);
    return size;
  }
  ctx.logger.warn(
    { host, image: entry.imageName, server: src.where },
    'image server gives no size: the pool-space precheck counts 0 bytes for it',
  );
  return 0;
}
