// File names at the edges of what the seed's ISO 9660 builder accepts, read back by isoinfo
// (level-1 names, Joliet, Rock Ridge) and bsdtar as given.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildIso9660, type IsoFile } from '../../src/provider/seed/iso9660.js';
import { bsdtarFiles, extract, listedNames, NOW, run } from '../harness/seed-readers.js';

describe('file names at the edges', () => {
  it('reach every reader as given', async () => {
    const names = [
      'a',
      '0',
      '-',
      '_',
      '...',
      '.hidden',
      'trailing.',
      'a'.repeat(64),
      'a'.repeat(63) + 'b',
      'meta-data',
      'meta-datb',
      'x.tar.gz',
      'x.tar.gy',
    ];
    const files: IsoFile[] = names.map((name, i) => ({
      name,
      data: Buffer.from(`${name}\n`.repeat(i)),
    }));
    const work = await mkdtemp(path.join(os.tmpdir(), 'kvm2-seed-names-'));
    try {
      const iso = path.join(work, 'names.iso');
      await writeFile(iso, buildIso9660(files, { volumeId: 'cidata', timestamp: NOW }));
      const sorted = [...names].sort();
      expect(listedNames(await run('isoinfo', ['-R', '-l', '-i', iso]))).toEqual(sorted);
      expect(listedNames(await run('isoinfo', ['-J', '-l', '-i', iso]))).toEqual(sorted);
      const primary = listedNames(await run('isoinfo', ['-l', '-i', iso]));
      expect(new Set(primary).size).toBe(names.length);
      for (const id of primary) expect(id).toMatch(/^[A-Z0-9_]{0,8}\.[A-Z0-9_]{0,3};1$/);
      const unpacked = await bsdtarFiles(iso, path.join(work, 'x'));
      expect([...unpacked.keys()]).toEqual(sorted);
      for (const f of files) {
        expect((await extract(iso, f.name, '-R')).equals(f.data), f.name).toBe(true);
        expect((await extract(iso, f.name, '-J')).equals(f.data), f.name).toBe(true);
        expect(unpacked.get(f.name)?.equals(f.data), f.name).toBe(true);
      }
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});
