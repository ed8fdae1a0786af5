// One fill of the image cache (SPEC §5), run by the holder of the fill lock: GET, create the
// base, stream the body into StorageVolUpload on a dedicated connection while hashing it,
// verify, refresh the pool, write the marker last. Memory stays at a few chunks whatever the
// image's size: the upload pulls the body only as fast as libvirtd takes it.
import { createHash, type Hash } from 'node:crypto';
import { SpanStatusCode } from '@opentelemetry/api';
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { VirErr } from '../../libvirt/error-codes.js';
import { LibvirtError } from '../../libvirt/errors.js';
import {
  StoragePoolGetInfo,
  StorageVolCreateXML,
  StorageVolGetXMLDesc,
  StorageVolUpload,
  type NonnullStoragePool,
  type NonnullStorageVol,
} from '../../libvirt/protocol.gen.js';
import type { ProviderContext } from '../core/host-context.js';
import { firstChild, readXml } from '../xml/types.js';
import { buildVolumeXml, parseVolumeBacking } from '../xml/volume.js';
import { describeBase, type BaseImage, type CacheEntry } from './base-image.js';
import {
  DOWNLOAD_TIMEOUTS,
  imageSource,
  networkError,
  openImage,
  type ImageSource,
} from './download.js';
import { deleteVolume, lookupVolume, refreshPool, writeSmallVolume } from './volumes.js';
import { FEATURES_END, qcow2ExternalData, qcow2NamesBacking } from './qcow2-overlay.js';
import { Kvm2Error, type Kvm2ErrorOptions } from '../../errors/error.js';

/** Budget of removing a half-made volume: fresh, since the job's signal may be what failed. */
const CLEANUP_BUDGET_MS = 30_000;

/**
 * Bytes that are no image kvm2 may use as configured: not qcow2 when qcow2 was configured (an
 * HTML error page served with 200, say), or a qcow2 naming a backing file or an external data
 * file (qemu would open that host file, chosen by whoever made the image, for the guest).
 */
export class ImageContentError extends Kvm2Error {
  declare readonly code: 'ERR_IMAGE_CONTENT';
  override name = 'ImageContentError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_IMAGE_CONTENT', message, options);
  }
}

/** Bytes streamed from the image's URL into its volume so far, and the total when known. */
export type DownloadProgress = (bytes: number, totalBytes: number | undefined) => void;

export async function fillBaseImage(
  ctx: ProviderContext,
  entry: CacheEntry,
  pool: NonnullStoragePool,
  signal: AbortSignal,
  onBytes?: DownloadProgress,
): Promise<BaseImage> {
  const src = imageSource(entry.imageName, entry.image);
  const attributes = {
    'kvm2.host': entry.host,
    'kvm2.image': entry.imageName,
    'kvm2.volume': entry.baseName,
    ...(src.file === undefined
      ? { 'server.address': src.url.hostname }
      : { 'file.path': src.file }),
  };
  return ctx.tracer.startActiveSpan('kvm2.download', { attributes }, async (span) => {
    const started = performance.now();
    const budget = AbortSignal.any([signal, AbortSignal.timeout(DOWNLOAD_TIMEOUTS.fillMs)]);
    // Volumes this fill may have made, in order; all are removed unless the fill completes.
    const made: string[] = [];
    let conn: LibvirtConnection | undefined;
    let cancelResponse: (() => void) | undefined;
    let done = false;
    try {
      const response = await openImage(src, { signal: budget });
      cancelResponse = response.cancel;
      conn = await ctx.hosts.dedicated(entry.host, { signal: budget });
      const cap = await byteCap(conn, pool, entry, src, budget);
      if (response.length !== undefined) cap.check(response.length, 'says');
      // Created raw, whatever the image: a raw volume is a plain file of exactly the uploaded
      // bytes, and the refresh below lets libvirt probe it as qcow2 (docs/image-cache.md).
      // Without a Content-Length it starts at one byte and the upload extends it.
      const xml = buildVolumeXml({
        name: entry.baseName,
        capacityBytes: BigInt(response.length ?? 1),
        format: 'raw',
      });
      made.push(entry.baseName);
      const base = await createVolume(conn, pool, entry, xml, budget, made);
      const tally = { hash: createHash('sha256'), bytes: 0, head: Buffer.alloc(0) };
      await conn.upload(
        StorageVolUpload,
        { vol: base, offset: 0n, length: 0n, flags: 0 },
        hashing(response.body, tally, (bytes) => {
          // Counted as it streams: a body without Content-Length, or one longer than it said,
          // stops here, before the pool takes a byte more than allowed.
          cap.check(bytes, 'sent');
          onBytes?.(bytes, response.length);
        }),
        { signal: budget },
      );
      const sha256 = verify(src, entry, response.length, tally);
      await refreshPool(conn, pool, budget);
      // The base's path and size are read with the check, before the marker (sent together:
      // after the marker's upload they would wait out the pool refresh libvirt makes for it).
      const [, image] = await Promise.all([
        checkContent(conn, base, entry, src, tally.head, budget),
        describeBase(conn, base, entry, sha256, budget),
      ]);
      // The marker last: once it is there any process may use the base (a cache hit takes no
      // lock), so nothing after it may fail and have this fill remove what it vouched for.
      made.push(entry.markerName);
      await writeSmallVolume(conn, pool, entry.markerName, Buffer.from(sha256, 'latin1'), budget);
      done = true;
      const ms = Math.round(performance.now() - started);
      span.setAttributes({ 'kvm2.image.bytes': tally.bytes, 'kvm2.image.sha256': sha256 });
      ctx.logger.info(
        {
          host: entry.host,
          image: entry.imageName,
          volume: entry.baseName,
          bytes: tally.bytes,
          ms,
        },
        'image cached',
      );
      return image;
    } catch (err) {
      // Cancelled or out of time: one message whichever call noticed first. The lock lost:
      // said as such (transient), not as the download's cancellation.
      const e = lockLost(signal)
        ? asError(signal.reason)
        : budget.aborted
          ? networkError(src, err, budget)
          : asError(err);
      span.recordException(e);
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
      throw e;
    } finally {
      cancelResponse?.();
      if (conn !== undefined) {
        // A failed upload may leave the daemon's stream open: drop the link, no goodbye.
        if (done) await conn.close();
        else conn.destroy();
      }
      // Not after the lock is lost: another worker may hold it now, have removed this fill's
      // volumes as debris and made its own of the same names, which a removal by name would
      // take. What is left here is debris for the next holder.
      if (!done && lockLost(signal)) {
        ctx.logger.warn(
          { host: entry.host, image: entry.imageName, volume: entry.baseName },
          'image fill lost its lock: its volumes are left to the next holder',
        );
      } else if (!done) await removeVolumes(ctx, entry, pool, made.reverse());
      span.end();
    }
  });
}

/** ERR_IMAGE_TOO_LARGE (permanent) for a count over the image's maxSize. */
export function refuseOverMaxSize(
  entry: Pick<CacheEntry, 'imageName' | 'image'>,
  src: Pick<ImageSource, 'where'>,
  bytes: number,
  what: string,
): void {
  const maxSize = entry.image.maxSize;
  if (bytes <= maxSize) return;
  throw new Kvm2Error(
    'ERR_IMAGE_TOO_LARGE',
    `image '${entry.imageName}' from ${src.where} ${what}, over its maxSize of ${maxSize} (kvm2.images.${entry.imageName}.maxSize)`,
  );
}

/**
 * The most bytes this fill may write: the image's maxSize, and the pool's free space now less
 * the host's poolReserve (other instances on the pool must not meet ENOSPC because an image
 * server sent more than it should). `check` throws once a count goes over either.
 */
async function byteCap(
  conn: LibvirtConnection,
  pool: NonnullStoragePool,
  entry: CacheEntry,
  src: ImageSource,
  signal: AbortSignal,
): Promise<{ check(bytes: number, how: 'says' | 'sent'): void }> {
  const { available } = await conn.call(StoragePoolGetInfo, { pool }, { signal });
  const reserve = BigInt(entry.poolReserve);
  const room = available > reserve ? Number(available - reserve) : 0;
  const prefix = `image '${entry.imageName}' from ${src.where}`;
  return {
    check(bytes, how) {
      const what = how === 'says' ? `says it has ${bytes} bytes` : `had sent ${bytes} bytes`;
      refuseOverMaxSize(entry, src, bytes, what);
      if (bytes > room) {
        throw new Kvm2Error(
          'ERR_POOL_FULL',
          `${prefix} ${what}; pool '${entry.poolName}' on host '${entry.host}' has ${available} bytes free, of which ${entry.poolReserve} stay in reserve`,
        );
      }
    },
  };
}

/** The fill's lock was lost (KeyedLocks' signal fired with ERR_LOCK_LOST), not cancelled. */
function lockLost(signal: AbortSignal): boolean {
  return (
    signal.aborted && (signal.reason as { code?: unknown } | undefined)?.code === 'ERR_LOCK_LOST'
  );
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

async function createVolume(
  conn: LibvirtConnection,
  pool: NonnullStoragePool,
  entry: CacheEntry,
  xml: string,
  signal: AbortSignal,
  made: string[],
): Promise<NonnullStorageVol> {
  try {
    return (await conn.call(StorageVolCreateXML, { pool, xml, flags: 0 }, { signal })).vol;
  } catch (err) {
    if (!(err instanceof LibvirtError && err.libvirtCode === VirErr.STORAGE_VOL_EXIST)) throw err;
    // Debris was removed under the lock, so this is another fill at work: another image name
    // configured with the same sha256, under its own lock. Not ours to remove; a retry finds
    // it cached.
    made.pop();
    throw new Kvm2Error(
      'ERR_LOCK_BUSY',
      `image '${entry.imageName}': volume '${entry.baseName}' is being filled by another image of the same sha256`,
      { cause: err },
    );
  }
}

async function* hashing(
  body: AsyncIterable<Uint8Array>,
  tally: { readonly hash: Hash; bytes: number; head: Buffer },
  onBytes: (bytes: number) => void,
): AsyncGenerator<Uint8Array, void, undefined> {
  for await (const chunk of body) {
    tally.hash.update(chunk);
    // The image's first bytes, for what its qcow2 header says that libvirt's probe does not.
    if (tally.head.length < FEATURES_END) {
      const part = chunk.subarray(0, FEATURES_END - tally.head.length);
      tally.head = Buffer.concat([tally.head, part]);
    }
    tally.bytes += chunk.length;
    onBytes(tally.bytes);
    yield chunk;
  }
}

/** The digest of what was uploaded, once it is whole and the one configured. */
function verify(
  src: ImageSource,
  entry: CacheEntry,
  length: number | undefined,
  tally: { readonly hash: Hash; readonly bytes: number },
): string {
  const prefix = `image '${entry.imageName}' from ${src.where}`;
  if (tally.bytes === 0) {
    throw new Kvm2Error('ERR_IMAGE_EMPTY', `${prefix}: the body was empty`);
  }
  if (length !== undefined && tally.bytes !== length) {
    throw new Kvm2Error(
      'ERR_IMAGE_HTTP',
      `${prefix}: the body ended after ${tally.bytes} of ${length} bytes`,
      { kind: 'transient' },
    );
  }
  const sha256 = tally.hash.digest('hex');
  if (entry.image.sha256 !== undefined && sha256 !== entry.image.sha256) {
    throw new Kvm2Error(
      'ERR_IMAGE_DIGEST_MISMATCH',
      `${prefix}: sha256 of the ${tally.bytes} bytes is ${sha256}, the configuration says ${entry.image.sha256}`,
    );
  }
  return sha256;
}

/**
 * libvirt's probe of the uploaded bytes, after the refresh, against the configured format; and
 * the qcow2 header's own word (`head`, its first bytes) on a backing file and an external data
 * file.
 */
async function checkContent(
  conn: LibvirtConnection,
  base: NonnullStorageVol,
  entry: CacheEntry,
  src: ImageSource,
  head: Buffer,
  signal: AbortSignal,
): Promise<void> {
  if (entry.image.format !== 'qcow2') return; // any bytes are a raw disk
  const { xml } = await conn.call(StorageVolGetXMLDesc, { vol: base, flags: 0 }, { signal });
  const target = firstChild(readXml(xml), 'target');
  const probed = (target && firstChild(target, 'format'))?.attributes.get('type') ?? 'unknown';
  const prefix = `image '${entry.imageName}' from ${src.where}`;
  if (probed !== 'qcow2') {
    throw new ImageContentError(`${prefix}: configured as qcow2, but libvirt reads ${probed}`);
  }
  if (parseVolumeBacking(xml) !== null || qcow2NamesBacking(head)) {
    throw new ImageContentError(`${prefix}: the qcow2 names a backing file; kvm2 takes none`);
  }
  if (qcow2ExternalData(head)) {
    throw new ImageContentError(
      `${prefix}: the qcow2 keeps its data in an external data file; kvm2 takes none`,
    );
  }
}

async function removeVolumes(
  ctx: ProviderContext,
  entry: CacheEntry,
  pool: NonnullStoragePool,
  names: readonly string[],
): Promise<void> {
  if (names.length === 0) return;
  const signal = AbortSignal.timeout(CLEANUP_BUDGET_MS);
  for (const name of names) {
    try {
      const conn = await ctx.hosts.shared(entry.host, { signal });
      const vol = await lookupVolume(conn, pool, name, signal);
      if (vol !== undefined) await deleteVolume(conn, vol, signal);
    } catch (err) {
      // Left behind it is debris: the next fill of this image removes it under the lock.
      ctx.logger.error(
        { host: entry.host, image: entry.imageName, volume: name, err },
        'could not remove a half-made image volume',
      );
    }
  }
}
