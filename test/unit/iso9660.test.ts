// The ISO 9660 writer on its bytes: descriptors, both-endian fields, path tables and records
// where ECMA-119 puts them; names it refuses and why; the same input giving the same bytes.
// The property test has Debian's isoinfo (genisoimage) read every generated image back.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedErrorOf } from '../harness/seed-readers.js';
import {
  buildIso9660,
  ISO_MAX_DATA_BYTES,
  levelOneIdentifiers,
  type IsoFile,
} from '../../src/provider/seed/iso9660.js';

const execFileAsync = promisify(execFile);
const SECTOR = 2048;
const WHEN = new Date('2024-02-29T12:34:56.780Z');

const FILES: IsoFile[] = [
  { name: 'meta-data', data: Buffer.from('instance-id: "i-1"\nlocal-hostname: "vm"\n') },
  { name: 'user-data', data: Buffer.from('#cloud-config\n') },
  { name: 'empty', data: Buffer.alloc(0) },
  { name: 'big.bin', data: Buffer.alloc(3 * SECTOR + 5, 0xab) },
];

const sector = (iso: Buffer, n: number): Buffer => iso.subarray(n * SECTOR, (n + 1) * SECTOR);

/** A both-byte-order field (ECMA-119 §7.2.3, §7.3.3), checked for agreement. */
function both(buf: Buffer, offset: number, bits: 16 | 32): number {
  const le = bits === 16 ? buf.readUInt16LE(offset) : buf.readUInt32LE(offset);
  const be = bits === 16 ? buf.readUInt16BE(offset + 2) : buf.readUInt32BE(offset + 4);
  expect(be, `both-endian field at ${offset}`).toBe(le);
  return le;
}

interface Record {
  readonly extent: number;
  readonly size: number;
  readonly flags: number;
  readonly id: Buffer;
  readonly systemUse: Buffer;
}

/** The records of a directory extent, checking each stays inside its sector and is even. */
function readDirectory(iso: Buffer, extent: number, size: number): Record[] {
  const records: Record[] = [];
  for (let s = 0; s < size / SECTOR; s += 1) {
    const data = sector(iso, extent + s);
    let at = 0;
    while (at < SECTOR && data[at] !== 0) {
      const len = data[at] ?? 0;
      expect(len % 2, 'record length is even').toBe(0);
      expect(at + len, 'record stays in its sector').toBeLessThanOrEqual(SECTOR);
      const rec = data.subarray(at, at + len);
      const idLen = rec[32] ?? 0;
      const suStart = 33 + idLen + (idLen % 2 === 0 ? 1 : 0);
      records.push({
        extent: both(rec, 2, 32),
        size: both(rec, 10, 32),
        flags: rec[25] ?? 0,
        id: rec.subarray(33, 33 + idLen),
        systemUse: rec.subarray(suStart),
      });
      both(rec, 28, 16);
      at += len;
    }
  }
  return records;
}

/** SUSP entries of a system use field: signature → entry bytes. */
function suspEntries(su: Buffer): { sig: string; bytes: Buffer }[] {
  const out: { sig: string; bytes: Buffer }[] = [];
  for (let at = 0; at + 4 <= su.length;) {
    const len = su[at + 2] ?? 0;
    if (len < 4) break;
    out.push({ sig: su.toString('ascii', at, at + 2), bytes: su.subarray(at, at + len) });
    at += len;
  }
  return out;
}

describe('buildIso9660 layout', () => {
  const iso = buildIso9660(FILES, { volumeId: 'cidata', timestamp: WHEN });

  it('is whole sectors with an empty system area', () => {
    expect(iso.length % SECTOR).toBe(0);
    expect(iso.subarray(0, 16 * SECTOR).every((b) => b === 0)).toBe(true);
  });

  it('has a primary, a Joliet and a terminator descriptor from sector 16', () => {
    const [pvd, svd, term] = [sector(iso, 16), sector(iso, 17), sector(iso, 18)];
    expect([pvd[0], pvd.toString('ascii', 1, 6), pvd[6]]).toEqual([1, 'CD001', 1]);
    expect([svd[0], svd.toString('ascii', 1, 6), svd[6]]).toEqual([2, 'CD001', 1]);
    expect(svd.toString('ascii', 88, 91)).toBe('%/E');
    expect([term[0], term.toString('ascii', 1, 6), term[6]]).toEqual([255, 'CD001', 1]);
    expect(term.subarray(7).every((b) => b === 0)).toBe(true);
  });

  it('carries the label as given, in ASCII and in UCS-2', () => {
    expect(sector(iso, 16).toString('ascii', 40, 72)).toBe('cidata'.padEnd(32, ' '));
    const joliet = Buffer.from(sector(iso, 17).subarray(40, 72)).swap16().toString('utf16le');
    expect(joliet).toBe('cidata'.padEnd(16, ' '));
  });

  it('agrees with itself on sizes, in both byte orders', () => {
    for (const n of [16, 17]) {
      const vd = sector(iso, n);
      expect(both(vd, 80, 32)).toBe(iso.length / SECTOR);
      expect([both(vd, 120, 16), both(vd, 124, 16), both(vd, 128, 16)]).toEqual([1, 1, SECTOR]);
      expect(both(vd, 132, 32)).toBe(10);
      const root = vd.subarray(156, 190);
      const rootExtent = both(root, 2, 32);
      expect(both(root, 10, 32) % SECTOR).toBe(0);
      // L table little-endian, M table big-endian, each one root record pointing at the root.
      const l = sector(iso, vd.readUInt32LE(140));
      const m = sector(iso, vd.readUInt32BE(148));
      expect([l[0], l.readUInt32LE(2), l.readUInt16LE(6), l[8]]).toEqual([1, rootExtent, 1, 0]);
      expect([m[0], m.readUInt32BE(2), m.readUInt16BE(6), m[8]]).toEqual([1, rootExtent, 1, 0]);
    }
  });

  it('lists every file in both trees, pointing at its bytes', () => {
    const pvdRoot = sector(iso, 16).subarray(156, 190);
    const primary = readDirectory(iso, both(pvdRoot, 2, 32), both(pvdRoot, 10, 32));
    const svdRoot = sector(iso, 17).subarray(156, 190);
    const joliet = readDirectory(iso, both(svdRoot, 2, 32), both(svdRoot, 10, 32));
    expect(primary.slice(0, 2).map((r) => [r.id[0], r.flags])).toEqual([
      [0, 2],
      [1, 2],
    ]);
    const rrNames = primary.slice(2).map((r) => {
      const nm = suspEntries(r.systemUse).find((e) => e.sig === 'NM');
      return nm?.bytes.toString('ascii', 5) ?? '';
    });
    expect(rrNames.sort()).toEqual(FILES.map((f) => f.name).sort());
    const jolietNames = joliet.slice(2).map((r) => Buffer.from(r.id).swap16().toString('utf16le'));
    expect(jolietNames).toEqual(FILES.map((f) => f.name).sort());
    for (const file of FILES) {
      const rec = joliet.find((_, i) => jolietNames[i - 2] === file.name);
      const start = (rec?.extent ?? -1) * SECTOR;
      expect(rec?.size).toBe(file.data.length);
      expect(iso.subarray(start, start + file.data.length).equals(file.data)).toBe(true);
    }
    // Rock Ridge: SP first in the root's ".", ER reached through its CE.
    const dot = suspEntries(primary[0]?.systemUse ?? Buffer.alloc(0));
    expect(dot.map((e) => e.sig)).toEqual(['SP', 'PX', 'TF', 'CE']);
    const ce = dot[3]?.bytes ?? Buffer.alloc(28);
    const erAt = both(ce, 4, 32) * SECTOR + both(ce, 12, 32);
    const er = iso.subarray(erAt, erAt + both(ce, 20, 32));
    expect(er.toString('ascii', 0, 2)).toBe('ER');
    expect(er.toString('ascii', 8, 8 + (er[4] ?? 0))).toBe('RRIP_1991A');
  });

  it('gives level-1 names to readers without extensions', () => {
    const ids = levelOneIdentifiers(['meta-data', 'user-data', 'network-config', 'vendor-data']);
    expect(Object.fromEntries(ids)).toEqual({
      'meta-data': 'META_DAT.;1',
      'user-data': 'USER_DAT.;1',
      'network-config': 'NETWORK_.;1',
      'vendor-data': 'VENDOR_D.;1',
    });
    expect(Object.fromEntries(levelOneIdentifiers(['a.tar.gz', '.hidden', 'x.']))).toEqual({
      'a.tar.gz': 'A_TAR.GZ;1',
      '.hidden': '_HIDDEN.;1',
      'x.': 'X_.;1',
    });
  });

  it('keeps level-1 names legal and distinct for any name set', () => {
    fc.assert(
      fc.property(fc.uniqueArray(nameArb, { minLength: 1, maxLength: 40 }), (names) => {
        const ids = [...levelOneIdentifiers(names).values()];
        expect(new Set(ids).size).toBe(names.length);
        for (const id of ids) expect(id).toMatch(/^[A-Z0-9_]{0,8}\.[A-Z0-9_]{0,3};1$/);
      }),
      { numRuns: 200 },
    );
  });
});

describe('buildIso9660 input checks', () => {
  const build = (files: IsoFile[]): Buffer =>
    buildIso9660(files, { volumeId: 'cidata', timestamp: WHEN });
  const errorOf = seedErrorOf;
  const file = (name: string): IsoFile => ({ name, data: Buffer.from('x') });

  it.each([
    ['User-Data', 'not 1..64 characters'],
    ['', 'not 1..64 characters'],
    ['a'.repeat(65), 'not 1..64 characters'],
    ['naïve', 'not 1..64 characters'],
    ['with space', 'not 1..64 characters'],
    ['.', 'not 1..64 characters'],
    ['..', 'not 1..64 characters'],
    ['dir/user-data', 'is a path'],
  ])('refuses the name %j, naming the file', (name, why) => {
    const err = errorOf(() => build([file('ok'), file(name)]));
    expect(err.code).toBe('ERR_SEED_FILE_NAME');
    expect(err.kind).toBe('permanent');
    expect(err.field).toBe('files[1].name');
    expect(err.message).toContain(why);
    expect(err.message).toContain(JSON.stringify(name).slice(0, 20));
  });

  it('refuses a name given twice', () => {
    const err = errorOf(() => build([file('user-data'), file('x'), file('user-data')]));
    expect([err.code, err.field]).toEqual(['ERR_SEED_FILE_NAME', 'files[2].name']);
    expect(err.message).toContain('appears twice');
  });

  it('accepts names at the edges of the alphabet and length', () => {
    const names = ['a', '0', '-', '_', 'a'.repeat(64), '...', '.a', 'a.'];
    expect(() => build(names.map(file))).not.toThrow();
  });

  it('refuses more data than the cap, naming sizes but never content', () => {
    const secret = Buffer.alloc(ISO_MAX_DATA_BYTES - 10, 's');
    secret.write('password=hunter2', 0);
    const more = { name: 'more', data: Buffer.alloc(11) };
    const err = errorOf(() => build([{ name: 'user-data', data: secret }, more]));
    expect(err.code).toBe('ERR_SEED_TOO_LARGE');
    expect(err.message).toContain(`user-data ${secret.length}, more 11`);
    expect(err.message).not.toContain('hunter2');
    expect(() =>
      build([
        { name: 'user-data', data: secret },
        { name: 'fits', data: Buffer.alloc(10) },
      ]),
    ).not.toThrow();
  });

  it('refuses a label or timestamp it cannot write', () => {
    const files = [file('x')];
    expect(errorOf(() => buildIso9660(files, { volumeId: 'no spaces' })).field).toBe('volumeId');
    expect(errorOf(() => buildIso9660(files, { volumeId: 'x'.repeat(17) })).field).toBe('volumeId');
    const invalid = new Date(Number.NaN);
    expect(errorOf(() => buildIso9660(files, { volumeId: 'v', timestamp: invalid })).field).toBe(
      'timestamp',
    );
  });
});

describe('buildIso9660 determinism', () => {
  it('gives the same bytes for the same files and timestamp, in any order', () => {
    const a = buildIso9660(FILES, { volumeId: 'cidata', timestamp: WHEN });
    const b = buildIso9660([...FILES].reverse(), { volumeId: 'cidata', timestamp: WHEN });
    expect(a.equals(b)).toBe(true);
    const later = buildIso9660(FILES, { volumeId: 'cidata', timestamp: new Date(+WHEN + 1000) });
    expect(a.equals(later)).toBe(false);
  });
});

const nameArb = fc
  .stringMatching(/^[a-z0-9._-]{1,64}$/)
  .filter((name) => name !== '.' && name !== '..');

const contentArb = fc.oneof(
  fc.constant(new Uint8Array(0)),
  fc.uint8Array({ minLength: 1, maxLength: 3 * SECTOR }),
  fc.string({ unit: 'grapheme', maxLength: 300 }).map((s) => new Uint8Array(Buffer.from(s))),
  fc.integer({ min: 0, max: 3 }).map((k) => new Uint8Array(SECTOR * k + (k === 0 ? 1 : 0))),
);

/** Names in an `isoinfo -l` listing, "." and ".." left out. */
function listedNames(listing: string): string[] {
  return listing
    .split('\n')
    .map((line) => /\]\s+(\S+)\s*$/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && name !== '.' && name !== '..')
    .sort();
}

describe('buildIso9660 read back by isoinfo', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-iso9660-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('spreads a long directory over several sectors, records never straddling one', async () => {
    const files = Array.from({ length: 60 }, (_, i) => ({
      name: `${String(i).padStart(2, '0')}-${'n'.repeat(61)}`,
      data: Buffer.from(`file ${i}\n`),
    }));
    const iso = buildIso9660(files, { volumeId: 'cidata', timestamp: WHEN });
    for (const n of [16, 17]) {
      const root = sector(iso, n).subarray(156, 190);
      const size = both(root, 10, 32);
      expect(size / SECTOR).toBeGreaterThan(2);
      expect(readDirectory(iso, both(root, 2, 32), size)).toHaveLength(62);
    }
    const file = path.join(dir, 'long.iso');
    await writeFile(file, iso);
    for (const tree of ['-R', '-J']) {
      const { stdout } = await execFileAsync('isoinfo', [tree, '-l', '-i', file]);
      expect(listedNames(stdout), tree).toEqual(files.map((f) => f.name));
    }
    const last = files[59];
    const out = await execFileAsync('isoinfo', ['-R', '-x', `/${last?.name}`, '-i', file]);
    expect(out.stdout).toBe('file 59\n');
  });

  it('lists random file sets in Rock Ridge and Joliet and extracts them byte for byte', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.record({ name: nameArb, data: contentArb }), {
          minLength: 1,
          maxLength: 5,
          selector: (f) => f.name,
        }),
        async (files) => {
          const file = path.join(dir, `run-${(run += 1)}.iso`);
          await writeFile(file, buildIso9660(files, { volumeId: 'cidata', timestamp: WHEN }));
          const names = files.map((f) => f.name).sort();
          for (const tree of ['-R', '-J']) {
            const { stdout } = await execFileAsync('isoinfo', [tree, '-l', '-i', file]);
            expect(listedNames(stdout), tree).toEqual(names);
          }
          for (const f of files) {
            const out = await execFileAsync('isoinfo', ['-R', '-x', `/${f.name}`, '-i', file], {
              encoding: 'buffer',
              maxBuffer: 64 * 1024 * 1024,
            });
            expect(Buffer.compare(out.stdout, Buffer.from(f.data)), f.name).toBe(0);
          }
          await rm(file);
        },
      ),
      { numRuns: 25 },
    );
  });
});
