// What the image cache keeps per host and image, and the names it keeps it under (SPEC §5):
// a base volume named from the image's digest, and next to it a marker volume whose content is
// the 64-hex sha256 of the base's bytes, written last, so a marker vouches for a whole base.
import { createHash } from 'node:crypto';
import type { LibvirtConnection } from '../../libvirt/connection.js';
import {
  StorageVolGetInfo,
  StorageVolGetPath,
  type NonnullStorageVol,
} from '../../libvirt/protocol.gen.js';
import type { ImageConfig } from '../config/schema.js';
import { hostConfig, imageConfig, type ProviderContext } from '../core/host-context.js';
import { KVM2_PREFIX } from '../core/ids.js';

export interface BaseImage {
  readonly volumeName: string;
  /** Absolute path on the host, for `<backingStore>` and `<disk type='file'>`. */
  readonly path: string;
  readonly format: 'qcow2' | 'raw';
  /** sha256 of the base's bytes, as its marker says. */
  readonly sha256: string;
  /** libvirt's capacity: a qcow2's virtual size, a raw image's length. */
  readonly capacityBytes: bigint;
}

const DIGEST = /^[0-9a-f]{64}$/;

/** The bytes a marker read fetches: a well-formed marker has 64, junk is cut off there. */
export const MARKER_READ_BYTES = 128;

/**
 * `kvm2-base-<64 hex>.<format>`. The hex is the configured sha256; without one, the sha256 of
 * the URL (credentials removed): the name must be known before the download, and libvirt
 * cannot rename a volume once its content has been hashed. Such an image is cached per URL, so
 * new bytes at the same URL are not seen until the base is deleted: configure the sha256 to
 * pin an image. 64 hex digits make the name longer than a DNS label, so GC never takes a base
 * for an instance's volume (ids.ts instanceVolumeOwner).
 */
export function baseVolumeName(image: ImageConfig): string {
  return `${KVM2_PREFIX}base-${imageKey(image)}.${image.format}`;
}

/** `kvm2-base-<64 hex>.<format>.sha256`, the base's name and a suffix. */
export function markerVolumeName(image: ImageConfig): string {
  return `${baseVolumeName(image)}.sha256`;
}

function imageKey(image: ImageConfig): string {
  if (image.sha256 !== undefined) return image.sha256;
  const url = new URL(image.url);
  url.username = '';
  url.password = '';
  return createHash('sha256').update(url.href).digest('hex');
}

/** Whether marker content vouches for a base of this image. */
export function isMarkerFor(content: string, image: ImageConfig): boolean {
  return DIGEST.test(content) && (image.sha256 === undefined || content === image.sha256);
}

/** One host's cache entry for one image, resolved from the configuration. */
export interface CacheEntry {
  readonly host: string;
  readonly imageName: string;
  readonly image: ImageConfig;
  readonly poolName: string;
  /** Bytes a fill leaves free in the pool (the host's poolReserve). */
  readonly poolReserve: number;
  readonly baseName: string;
  readonly markerName: string;
}

export function cacheEntry(ctx: ProviderContext, host: string, imageName: string): CacheEntry {
  const { pool: poolName, poolReserve } = hostConfig(ctx, host);
  const image = imageConfig(ctx, imageName);
  return {
    host,
    imageName,
    image,
    poolName,
    poolReserve,
    baseName: baseVolumeName(image),
    markerName: markerVolumeName(image),
  };
}

export async function describeBase(
  conn: LibvirtConnection,
  base: NonnullStorageVol,
  entry: CacheEntry,
  sha256: string,
  signal: AbortSignal,
): Promise<BaseImage> {
  const [{ name: path }, info] = await Promise.all([
    conn.call(StorageVolGetPath, { vol: base }, { signal }),
    conn.call(StorageVolGetInfo, { vol: base }, { signal }),
  ]);
  return {
    volumeName: base.name,
    path,
    format: entry.image.format,
    sha256,
    capacityBytes: info.capacity,
  };
}
