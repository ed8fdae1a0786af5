// ECMA-119 (ISO 9660) byte encoders: numbers, dates, directory records, path tables and volume
// descriptors. Pure functions from values to bytes; the layout (which sector holds what) is
// iso9660.ts's business. Section numbers below are ECMA-119 4th edition (2019).

/** Logical sector and logical block size: 2048 bytes everywhere in this writer. */
export const SECTOR_SIZE = 2048;
/** The first volume descriptor follows the 16-sector system area (§6.2.1). */
export const FIRST_DESCRIPTOR_SECTOR = 16;

// §7.2-§7.3: numbers are written little-endian (LE), big-endian (BE) or both, LE first
// ("both-byte order", 7.2.3 for 16 bits and 7.3.3 for 32 bits).

export function writeBoth16(buf: Buffer, offset: number, value: number): void {
  buf.writeUInt16LE(value, offset);
  buf.writeUInt16BE(value, offset + 2);
}

export function writeBoth32(buf: Buffer, offset: number, value: number): void {
  buf.writeUInt32LE(value, offset);
  buf.writeUInt32BE(value, offset + 4);
}

/** Both-byte-order 32-bit number as its own 8 bytes (for SUSP fields). */
export function both32(value: number): Buffer {
  const buf = Buffer.alloc(8);
  writeBoth32(buf, 0, value);
  return buf;
}

// §9.1.5 recording date, 7 bytes:
//   +-----------------+-------+-----+------+--------+--------+------------------------+
//   | years from 1900 | month | day | hour | minute | second | GMT offset, 15-min units|
//   +-----------------+-------+-----+------+--------+--------+------------------------+
// Always written in UTC, offset 0.
export function recordingDate(date: Date): Buffer {
  return Buffer.from([
    date.getUTCFullYear() - 1900,
    date.getUTCMonth() + 1,
    date.getUTCDate(),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds(),
    0,
  ]);
}

// §8.4.26.1 volume date, 17 bytes: "YYYYMMDDHHMMSSHH" as digits (HH = hundredths) and a GMT
// offset byte. All zero digits with offset 0 means "not specified".
export function volumeDate(date: Date | null): Buffer {
  if (date === null) return Buffer.concat([Buffer.from('0'.repeat(16), 'ascii'), Buffer.of(0)]);
  const pad = (n: number, width: number): string => String(n).padStart(width, '0');
  const digits =
    pad(date.getUTCFullYear(), 4) +
    pad(date.getUTCMonth() + 1, 2) +
    pad(date.getUTCDate(), 2) +
    pad(date.getUTCHours(), 2) +
    pad(date.getUTCMinutes(), 2) +
    pad(date.getUTCSeconds(), 2) +
    pad(Math.floor(date.getUTCMilliseconds() / 10), 2);
  return Buffer.concat([Buffer.from(digits, 'ascii'), Buffer.of(0)]);
}

export interface DirectoryRecordFields {
  /** First sector of the file's or directory's extent. */
  readonly extent: number;
  /** Bytes in the extent; for a directory, a whole number of sectors. */
  readonly size: number;
  readonly date: Date;
  readonly directory: boolean;
  /** 0x00 for ".", 0x01 for "..", else a level-1 name (`META_DAT.;1`) or UCS-2 BE (Joliet). */
  readonly identifier: Buffer;
  /** SUSP/Rock Ridge entries (primary tree only); padded here to an even record length. */
  readonly systemUse?: Buffer;
}

// §9.1 directory record:
//   0 len_dr  1 ext. attr. length  2 extent (both 32)  10 data length (both 32)
//   18 recording date (7)  25 flags (bit 1: directory)  26 file unit size  27 interleave gap
//   28 volume sequence number (both 16)  32 len_fi  33 identifier  [pad to even]  system use
// A record never spans a sector boundary (§6.8.1.1) and its length is even (§9.1.12-13).
export function directoryRecord(fields: DirectoryRecordFields): Buffer {
  const idLength = fields.identifier.length;
  const idPad = idLength % 2 === 0 ? 1 : 0;
  const systemUse = fields.systemUse ?? Buffer.alloc(0);
  const suPad = systemUse.length % 2;
  const length = 33 + idLength + idPad + systemUse.length + suPad;
  if (length > 255) throw new RangeError(`directory record of ${length} bytes exceeds 255`);
  const rec = Buffer.alloc(length);
  rec[0] = length;
  writeBoth32(rec, 2, fields.extent);
  writeBoth32(rec, 10, fields.size);
  recordingDate(fields.date).copy(rec, 18);
  rec[25] = fields.directory ? 0x02 : 0x00;
  writeBoth16(rec, 28, 1);
  rec[32] = idLength;
  fields.identifier.copy(rec, 33);
  systemUse.copy(rec, 33 + idLength + idPad);
  return rec;
}

/** Packs records into whole sectors, starting a new sector where a record would not fit. */
export function packDirectory(records: readonly Buffer[]): Buffer {
  const sectors: Buffer[] = [];
  let current = Buffer.alloc(SECTOR_SIZE);
  let used = 0;
  for (const rec of records) {
    if (used + rec.length > SECTOR_SIZE) {
      sectors.push(current);
      current = Buffer.alloc(SECTOR_SIZE);
      used = 0;
    }
    rec.copy(current, used);
    used += rec.length;
  }
  sectors.push(current);
  return Buffer.concat(sectors);
}

// §9.4 path table record, one per directory. Ours hold only the root (directory number 1,
// its own parent), so each table is one 10-byte record:
//   0 len_di (1)  1 ext. attr. length (0)  2 extent (4, LE in the L table, BE in the M table)
//   6 parent directory number (2, same order)  8 identifier 0x00  9 pad
export const ROOT_PATH_TABLE_SIZE = 10;

export function rootPathTable(extent: number, order: 'L' | 'M'): Buffer {
  const rec = Buffer.alloc(ROOT_PATH_TABLE_SIZE);
  rec[0] = 1;
  if (order === 'L') {
    rec.writeUInt32LE(extent, 2);
    rec.writeUInt16LE(1, 6);
  } else {
    rec.writeUInt32BE(extent, 2);
    rec.writeUInt16BE(1, 6);
  }
  return rec;
}

export interface VolumeDescriptorFields {
  /** Primary (§8.4, type 1) or Joliet supplementary (§8.5, type 2, UCS-2 BE text). */
  readonly kind: 'primary' | 'joliet';
  readonly volumeId: string;
  readonly applicationId: string;
  /** Total sectors in the image. */
  readonly volumeSectors: number;
  readonly pathTableL: number;
  readonly pathTableM: number;
  /** The 34-byte root directory record (identifier 0x00, no system use). */
  readonly rootRecord: Buffer;
  readonly date: Date;
}

/** Joliet's escape sequence for UCS-2 level 3 (Joliet specification, 1995, §3.1). */
const JOLIET_ESCAPE = Buffer.from('%/E', 'ascii');

// §8.4 primary volume descriptor; §8.5 supplementary one (same layout, Joliet text):
//   0 type  1 "CD001"  6 version 1  7 flags (0)  8 system id (32)  40 volume id (32)
//   72 zero (8)  80 volume space size (both 32)  88 escape sequences (32; PVD zero)
//   120 volume set size (both 16)  124 volume sequence number (both 16)
//   128 logical block size (both 16)  132 path table size (both 32)
//   140 L path table (LE 32)  144 optional L (0)  148 M path table (BE 32)  152 optional M (0)
//   156 root directory record (34)  190 volume set id (128)  318 publisher id (128)
//   446 data preparer id (128)  574 application id (128)  702 copyright file id (37)
//   739 abstract file id (37)  776 bibliographic file id (37)  813 creation date (17)
//   830 modification date (17)  847 expiration date (17)  864 effective date (17)
//   881 file structure version 1  882 zero  883 application use (512)  1395 zero (653)
export function volumeDescriptor(fields: VolumeDescriptorFields): Buffer {
  const joliet = fields.kind === 'joliet';
  const text = joliet ? ucs2Field : asciiField;
  const vd = Buffer.alloc(SECTOR_SIZE);
  vd[0] = joliet ? 2 : 1;
  vd.write('CD001', 1, 'ascii');
  vd[6] = 1;
  text('', 32).copy(vd, 8);
  text(fields.volumeId, 32).copy(vd, 40);
  writeBoth32(vd, 80, fields.volumeSectors);
  if (joliet) JOLIET_ESCAPE.copy(vd, 88);
  writeBoth16(vd, 120, 1);
  writeBoth16(vd, 124, 1);
  writeBoth16(vd, 128, SECTOR_SIZE);
  writeBoth32(vd, 132, ROOT_PATH_TABLE_SIZE);
  vd.writeUInt32LE(fields.pathTableL, 140);
  vd.writeUInt32BE(fields.pathTableM, 148);
  fields.rootRecord.copy(vd, 156);
  text('', 128).copy(vd, 190);
  text('', 128).copy(vd, 318);
  text('', 128).copy(vd, 446);
  text(fields.applicationId, 128).copy(vd, 574);
  text('', 37).copy(vd, 702);
  text('', 37).copy(vd, 739);
  text('', 37).copy(vd, 776);
  volumeDate(fields.date).copy(vd, 813);
  volumeDate(fields.date).copy(vd, 830);
  volumeDate(null).copy(vd, 847);
  volumeDate(fields.date).copy(vd, 864);
  vd[881] = 1;
  return vd;
}

// §8.3 volume descriptor set terminator: type 255, "CD001", version 1, the rest zero.
export function terminatorDescriptor(): Buffer {
  const vd = Buffer.alloc(SECTOR_SIZE);
  vd[0] = 255;
  vd.write('CD001', 1, 'ascii');
  vd[6] = 1;
  return vd;
}

/** An a-/d-character field: ASCII, padded with spaces (§7.4.3). */
function asciiField(value: string, width: number): Buffer {
  return Buffer.from(value.padEnd(width, ' '), 'ascii');
}

/** A Joliet text field: UCS-2 BE, padded with UCS-2 spaces; an odd last byte stays zero. */
function ucs2Field(value: string, width: number): Buffer {
  const field = Buffer.alloc(width);
  const padded = ucs2be(value.padEnd(Math.floor(width / 2), ' '));
  padded.copy(field, 0, 0, Math.min(padded.length, width));
  return field;
}

/** UCS-2 big-endian, as Joliet stores names and text. Callers pass BMP-only strings. */
export function ucs2be(value: string): Buffer {
  const buf = Buffer.from(value, 'utf16le');
  return buf.swap16();
}
