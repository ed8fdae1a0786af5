// System Use Sharing Protocol (SUSP 1.12, IEEE P1281) and Rock Ridge (RRIP 1.10, the
// "RRIP_1991A" that genisoimage writes and every reader knows) entries. Each entry starts with
//   0 signature (2 ASCII)  2 length of the whole entry (1)  3 entry version (1)
// and lives in a directory record's system use field or in a continuation area (CE).
import { both32, recordingDate } from './iso9660-records.js';

function entry(signature: string, version: number, body: Buffer): Buffer {
  const head = Buffer.from([signature.charCodeAt(0), signature.charCodeAt(1), 4 + body.length]);
  return Buffer.concat([head, Buffer.of(version), body]);
}

// SUSP §5.3 SP, first entry of the root's "." record: marks SUSP in use.
//   4 check bytes 0xBE 0xEF  6 bytes skipped at the start of every system use field (0)
export function suspSP(): Buffer {
  return entry('SP', 1, Buffer.from([0xbe, 0xef, 0]));
}

// SUSP §5.1 CE, continuation area: where the rest of this record's entries are.
//   4 block (both 32)  12 offset in the block (both 32)  20 length of the area (both 32)
export function suspCE(block: number, offset: number, length: number): Buffer {
  return entry('CE', 1, Buffer.concat([both32(block), both32(offset), both32(length)]));
}

const RRIP_ID = 'RRIP_1991A';
const RRIP_DESCRIPTOR =
  'THE ROCK RIDGE INTERCHANGE PROTOCOL PROVIDES SUPPORT FOR POSIX FILE SYSTEM SEMANTICS';
const RRIP_SOURCE =
  'PLEASE CONTACT DISC PUBLISHER FOR SPECIFICATION SOURCE.  SEE PUBLISHER IDENTIFIER IN ' +
  'PRIMARY VOLUME DESCRIPTOR FOR CONTACT INFORMATION.';

// SUSP §5.5 ER, extension reference, in the root's "." record (or its continuation): names the
// extension in use. Linux prefers Rock Ridge over Joliet only when it finds this entry.
//   4 len_id  5 len_des  6 len_src  7 extension version (1)  8 id, descriptor, source
// With RRIP's standard texts it is 237 bytes, too long for a record: it goes through CE.
export function suspER(): Buffer {
  const id = Buffer.from(RRIP_ID, 'ascii');
  const des = Buffer.from(RRIP_DESCRIPTOR, 'ascii');
  const src = Buffer.from(RRIP_SOURCE, 'ascii');
  const head = Buffer.from([id.length, des.length, src.length, 1]);
  return entry('ER', 1, Buffer.concat([head, id, des, src]));
}

/** POSIX file modes as RRIP stores them (st_mode bits). */
export const MODE_DIRECTORY = 0o040555;
export const MODE_REGULAR = 0o100444;

// RRIP 1.10 §4.1.1 PX, POSIX attributes (the 1.10 form, without the 1.12 serial number):
//   4 mode (both 32)  12 links (both 32)  20 uid (both 32)  28 gid (both 32)
export function rripPX(mode: number, links: number): Buffer {
  return entry('PX', 1, Buffer.concat([both32(mode), both32(links), both32(0), both32(0)]));
}

// RRIP §4.1.6 TF, timestamps: 4 flags, then one 7-byte date (§9.1.5 form) per flag set.
// Flags 0x0E: modify, access, attributes (change) - what genisoimage records.
export function rripTF(date: Date): Buffer {
  const stamp = recordingDate(date);
  return entry('TF', 1, Buffer.concat([Buffer.of(0x0e), stamp, stamp, stamp]));
}

// RRIP §4.1.4 NM, alternate name: 4 flags (0: complete, not continued), then the name bytes.
export function rripNM(name: string): Buffer {
  return entry('NM', 1, Buffer.concat([Buffer.of(0), Buffer.from(name, 'ascii')]));
}
