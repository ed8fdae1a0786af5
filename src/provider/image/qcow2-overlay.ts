// An instance's overlay as bytes: a new qcow2 (version 3) image backed by the base image, with
// no data clusters yet. libvirt makes an overlay by running `qemu-img create` on the host
// (StorageVolCreateXML), ~50 ms of a process start on every create's critical path; an empty
// overlay is four clusters of metadata that kvm2 writes itself and uploads into a raw-created
// volume, as it does the seed (docs/provider.md, "The overlay").
//
// Layout (qemu's docs/interop/qcow2.txt), as `qemu-img create -f qcow2 -b BASE -F FMT` lays
// it out, with 64 KiB clusters:
//   cluster 0  header (104 bytes: version 3, refcount order 4), then the header extensions
//              (the backing file's format; the end mark), then the backing file's path
//   cluster 1  refcount table: one entry, the block in cluster 2
//   cluster 2  refcount block: 16-bit refcounts, 1 for each of clusters 0–3
//   cluster 3  L1 table: one zero entry per 512 MiB of virtual size (no L2 tables yet)
// qemu allocates everything else as the guest writes. Numbers are big-endian.

const MAGIC = 0x514649fb; // 'QFI\xfb'
const VERSION = 3;
const CLUSTER_BITS = 16;
export const CLUSTER_BYTES = 1 << CLUSTER_BITS;
const HEADER_BYTES = 104;
const REFCOUNT_ORDER = 4; // 16-bit refcounts
const EXT_BACKING_FORMAT = 0xe2792aca;
const EXT_END = 0;
/** Bytes of guest disk one L1 entry covers: an L2 table of 8-byte entries, a cluster each. */
const L1_ENTRY_SPAN = BigInt(CLUSTER_BYTES / 8) * BigInt(CLUSTER_BYTES);
/** The whole overlay: header, refcount table, refcount block, L1 table. */
export const OVERLAY_BYTES = 4 * CLUSTER_BYTES;
const MAX_L1_ENTRIES = CLUSTER_BYTES / 8;

export interface OverlaySpec {
  /** The guest disk's size in bytes: a positive multiple of 512. */
  readonly virtualBytes: bigint;
  /** The backing file's absolute path, as qemu will open it. */
  readonly backingPath: string;
  readonly backingFormat: 'qcow2' | 'raw';
}

function pad8(n: number): number {
  return (n + 7) & ~7;
}

/** The overlay's bytes (OVERLAY_BYTES). Throws a RangeError naming what does not fit. */
export function qcow2Overlay(spec: OverlaySpec): Buffer {
  const { virtualBytes, backingPath, backingFormat } = spec;
  if (virtualBytes <= 0n || virtualBytes % 512n !== 0n) {
    throw new RangeError(`overlay size ${virtualBytes}: must be a positive multiple of 512`);
  }
  const l1Entries = Number((virtualBytes + L1_ENTRY_SPAN - 1n) / L1_ENTRY_SPAN);
  if (l1Entries > MAX_L1_ENTRIES) {
    throw new RangeError(
      `overlay size ${virtualBytes}: over the ${MAX_L1_ENTRIES} L1 entries of one cluster`,
    );
  }
  const path = Buffer.from(backingPath, 'utf8');
  const format = Buffer.from(backingFormat, 'ascii');
  const extensionsBytes = 8 + pad8(format.length) + 8;
  const pathOffset = HEADER_BYTES + extensionsBytes;
  // qemu reads at most 1023 bytes of a backing path, from within the first cluster.
  if (path.length === 0 || path.length > 1023 || path.includes(0)) {
    throw new RangeError(`backing path of ${path.length} bytes: must be 1 to 1023, without NUL`);
  }

  const image = Buffer.alloc(OVERLAY_BYTES);
  const refcountTable = CLUSTER_BYTES;
  const refcountBlock = 2 * CLUSTER_BYTES;
  const l1Table = 3 * CLUSTER_BYTES;

  image.writeUInt32BE(MAGIC, 0);
  image.writeUInt32BE(VERSION, 4);
  image.writeBigUInt64BE(BigInt(pathOffset), 8);
  image.writeUInt32BE(path.length, 16);
  image.writeUInt32BE(CLUSTER_BITS, 20);
  image.writeBigUInt64BE(virtualBytes, 24);
  image.writeUInt32BE(0, 32); // no encryption
  image.writeUInt32BE(l1Entries, 36);
  image.writeBigUInt64BE(BigInt(l1Table), 40);
  image.writeBigUInt64BE(BigInt(refcountTable), 48);
  image.writeUInt32BE(1, 56); // refcount table clusters
  image.writeUInt32BE(0, 60); // snapshots
  image.writeBigUInt64BE(0n, 64);
  image.writeBigUInt64BE(0n, 72); // incompatible features: none (clean, no external data)
  image.writeBigUInt64BE(0n, 80); // compatible features: none (no lazy refcounts)
  image.writeBigUInt64BE(0n, 88); // autoclear features
  image.writeUInt32BE(REFCOUNT_ORDER, 96);
  image.writeUInt32BE(HEADER_BYTES, 100);

  let at = HEADER_BYTES;
  image.writeUInt32BE(EXT_BACKING_FORMAT, at);
  image.writeUInt32BE(format.length, at + 4);
  format.copy(image, at + 8);
  at += 8 + pad8(format.length);
  image.writeUInt32BE(EXT_END, at);
  image.writeUInt32BE(0, at + 4);
  path.copy(image, pathOffset);

  image.writeBigUInt64BE(BigInt(refcountBlock), refcountTable);
  for (let cluster = 0; cluster < 4; cluster++) image.writeUInt16BE(1, refcountBlock + 2 * cluster);
  // The L1 table stays zero: every guest read goes to the backing file until qemu allocates.
  return image;
}

export interface Qcow2Backing {
  readonly path: string;
  readonly format: string | undefined;
}

/**
 * The backing file a qcow2 image's first bytes name; null when they are not a qcow2 header
 * or name none. Reads what qcow2Overlay writes, and any other version 2 or 3 header.
 */
export function qcow2Backing(head: Buffer): Qcow2Backing | null {
  if (head.length < 72 || head.readUInt32BE(0) !== MAGIC) return null;
  const version = head.readUInt32BE(4);
  const offset = Number(head.readBigUInt64BE(8));
  const size = head.readUInt32BE(16);
  if (size === 0 || offset + size > head.length) return null;
  const path = head.subarray(offset, offset + size).toString('utf8');
  let format: string | undefined;
  if (version >= 3 && head.length >= HEADER_BYTES) {
    let at = head.readUInt32BE(100);
    while (at + 8 <= head.length) {
      const type = head.readUInt32BE(at);
      const length = head.readUInt32BE(at + 4);
      if (type === EXT_END || at + 8 + length > head.length) break;
      if (type === EXT_BACKING_FORMAT)
        format = head.subarray(at + 8, at + 8 + length).toString('ascii');
      at += 8 + pad8(length);
    }
  }
  return { path, format };
}

/**
 * True when a qcow2 image's first bytes name a backing file: a non-zero backing_file_offset or
 * backing_file_size (bytes 8 to 20 of any version's header). libvirt's volume XML leaves the
 * backing store's path out when it has none to show (a network backing such as `nbd://host`).
 */
export function qcow2NamesBacking(head: Buffer): boolean {
  if (head.length < 20 || head.readUInt32BE(0) !== MAGIC) return false;
  return head.readBigUInt64BE(8) !== 0n || head.readUInt32BE(16) !== 0;
}

/** The incompatible-features bit of a version 3 header that says the data is in another file. */
const INCOMPAT_DATA_FILE = 1n << 2n;
/** The first bytes qcow2ExternalData reads: a version 3 header up to its feature bits. */
export const FEATURES_END = 80;

/**
 * True when a qcow2 image's first bytes say its data lives in an external file (version 3's
 * data_file, named in a header extension): qemu opens that file, a path on the host of the
 * image maker's choosing, for the guest's disk. libvirt 9.0's volume XML does not show it.
 */
export function qcow2ExternalData(head: Buffer): boolean {
  if (head.length < FEATURES_END || head.readUInt32BE(0) !== MAGIC) return false;
  if (head.readUInt32BE(4) < 3) return false; // version 2 has no feature bits, nor data files
  return (head.readBigUInt64BE(72) & INCOMPAT_DATA_FILE) !== 0n;
}
