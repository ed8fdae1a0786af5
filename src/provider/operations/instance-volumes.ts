// create's steps 5 and 6 (SPEC §3, docs/provider.md): the instance's overlay and seed, and
// what decides that volumes of their names, found with the domain absent, are this instance's
// to reuse or rebuild. "Never write over a volume kvm2 did not make for this instance": one
// another domain uses (a domain renamed by hand keeps its disks) is refused, and so is one
// that is neither an overlay of this base nor exactly what kvm2's own overlay upload leaves.
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { VirErr } from '../../libvirt/error-codes.js';
import { LibvirtError } from '../../libvirt/errors.js';
import {
  StorageVolGetPath,
  StorageVolGetXMLDesc,
  type NonnullStoragePool,
  type NonnullStorageVol,
} from '../../libvirt/protocol.gen.js';
import { Kvm2Error } from '../../errors/error.js';
import type { BaseImage } from '../image/base-image.js';
import { OVERLAY_BYTES, qcow2Backing, qcow2Overlay } from '../image/qcow2-overlay.js';
import {
  deleteVolume,
  domainsUsing,
  lookupVolume,
  readSmallVolume,
  uploadBytes,
  writeSmallVolumeWithPath,
} from '../image/volumes.js';
import { overlayVolumeName, seedVolumeName } from '../core/ids.js';
import { firstChild, readXml } from '../xml/types.js';
import { parseVolumeBacking } from '../xml/volume.js';

/** Where an instance's volumes go: its host's pool, under names made from its name. */
export interface VolumeTarget {
  readonly conn: LibvirtConnection;
  readonly host: string;
  readonly pool: NonnullStoragePool;
  readonly poolName: string;
  /** The instance's name. */
  readonly name: string;
  readonly signal: AbortSignal;
}

/**
 * ERR_FOREIGN_VOLUME, naming each volume and the domains whose disks use it, when another
 * domain uses any of `volumes` (found by this instance's names while its domain is absent, so
 * their names are all that ties them to it). One listing of the host's domains, made only when
 * such a volume exists: a first create finds none and asks nothing.
 */
export async function refuseVolumesInUse(
  t: VolumeTarget,
  volumes: readonly (NonnullStorageVol | undefined)[],
): Promise<void> {
  const found = volumes.filter((vol) => vol !== undefined);
  const users = await domainsUsing(t.conn, t.poolName, found, t.signal);
  const used = found.flatMap((vol, i) => {
    const domains = users[i] ?? [];
    return domains.length === 0 ? [] : [{ volume: vol.name, domains }];
  });
  if (used.length === 0) return;
  const named = used.map(
    ({ volume, domains }) =>
      `volume '${volume}' is a disk of domain ${domains.map((d) => `'${d}'`).join(', ')}`,
  );
  throw new Kvm2Error(
    'ERR_FOREIGN_VOLUME',
    `instance '${t.name}' on host '${t.host}': ${named.join('; ')}: not this instance's, left untouched`,
  );
}

/**
 * Step 5, first half: the overlay's path when `vol` (the volume of its name, if any) is backed
 * by the base (a retry's); ERR_FOREIGN_VOLUME when it is anything else; no path when there is
 * none.
 *
 * kvm2 writes its overlays (qcow2-overlay.ts) into raw-created volumes of exactly the overlay's
 * size, so libvirt reports one as raw without a backing store until a pool refresh; its first
 * clusters are read then (a retry's cost, never a first attempt's). An overlay an attempt began
 * to upload and did not finish (zeros, or the first part of kvm2's bytes, in such a volume) is
 * written again; the domain is defined only after its overlay is whole.
 */
export async function overlayState(
  t: VolumeTarget,
  base: BaseImage,
  virtualBytes: bigint,
  vol: NonnullStorageVol | undefined,
): Promise<{ readonly path?: string }> {
  if (vol === undefined) return {};
  const options = { signal: t.signal };
  const { xml } = await t.conn.call(StorageVolGetXMLDesc, { vol, flags: 0 }, options);
  let backingPath = parseVolumeBacking(xml)?.path;
  if (backingPath === undefined) {
    const head = (await readSmallVolume(t.conn, vol, OVERLAY_BYTES, t.signal)) ?? Buffer.alloc(0);
    const expected = overlayBytes(base, virtualBytes);
    if (isUploadVolume(xml, expected.length) && isUnfinishedUpload(head, expected)) {
      await uploadBytes(t.conn, vol, expected, t.signal);
      return { path: (await t.conn.call(StorageVolGetPath, { vol }, options)).name };
    }
    backingPath = qcow2Backing(head)?.path;
  }
  if (backingPath !== base.path) {
    throw new Kvm2Error(
      'ERR_FOREIGN_VOLUME',
      `volume '${vol.name}' on host '${t.host}' exists but is not backed by image '${base.volumeName}': not overwritten`,
    );
  }
  return { path: (await t.conn.call(StorageVolGetPath, { vol }, options)).name };
}

function overlayBytes(base: BaseImage, virtualBytes: bigint): Buffer {
  return qcow2Overlay({ virtualBytes, backingPath: base.path, backingFormat: base.format });
}

/**
 * Whether a volume's XML (https://libvirt.org/formatstorage.html#storage-volume-xml) is what
 * createOverlay makes before its upload ends: raw, of capacity `bytes`. Zeros in any other
 * volume are someone else's (`virsh vol-create-as … 1M` is all zeros too).
 */
function isUploadVolume(volumeXml: string, bytes: number): boolean {
  const root = readXml(volumeXml);
  const capacity = firstChild(root, 'capacity');
  const unit = capacity?.attributes.get('unit') ?? 'bytes';
  const target = firstChild(root, 'target');
  const format = target === undefined ? undefined : firstChild(target, 'format');
  return (
    unit === 'bytes' &&
    capacity?.text.trim() === String(bytes) &&
    format?.attributes.get('type') === 'raw'
  );
}

/**
 * True when `head` is what an interrupted upload of `expected` leaves: the volume's size, and
 * a first part of `expected` (maybe none) followed by nothing but zeros.
 */
function isUnfinishedUpload(head: Buffer, expected: Buffer): boolean {
  if (head.length !== expected.length || head.equals(expected)) return false;
  let written = 0;
  while (written < head.length && head[written] === expected[written]) written++;
  for (let i = written; i < head.length; i++) if (head[i] !== 0) return false;
  return true;
}

/**
 * Step 5, second half: a new overlay backed by the base; its path. kvm2's own qcow2 bytes in
 * a raw-created volume (libvirt's StorageVolCreateXML of a qcow2 runs qemu-img on the host).
 */
export async function createOverlay(
  t: VolumeTarget,
  base: BaseImage,
  virtualBytes: bigint,
): Promise<string> {
  const bytes = overlayBytes(base, virtualBytes);
  const volName = overlayVolumeName(t.name);
  try {
    return (await writeSmallVolumeWithPath(t.conn, t.pool, volName, bytes, t.signal)).path;
  } catch (err) {
    // Another attempt made it between our lookup and create: check it as above.
    if (err instanceof LibvirtError && err.libvirtCode === VirErr.STORAGE_VOL_EXIST) {
      const vol = await lookupVolume(t.conn, t.pool, volName, t.signal);
      await refuseVolumesInUse(t, [vol]);
      const made = await overlayState(t, base, virtualBytes, vol);
      if (made.path !== undefined) return made.path;
    }
    throw err;
  }
}

/**
 * Step 6: the seed is always rebuilt, so a retried create never boots a stale one. `old` is
 * the volume of its name found before, which refuseVolumesInUse let through.
 */
export async function uploadSeed(
  t: VolumeTarget,
  seed: Buffer,
  old: NonnullStorageVol | undefined,
): Promise<string> {
  if (old !== undefined) await deleteVolume(t.conn, old, t.signal);
  const volName = seedVolumeName(t.name);
  return (await writeSmallVolumeWithPath(t.conn, t.pool, volName, seed, t.signal)).path;
}
