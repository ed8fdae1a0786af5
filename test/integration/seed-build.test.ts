// buildSeed on its own: no temporary files, reproducible bytes, and refusals that name the
// field and never quote the content.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSeed, type SeedInput } from '../../src/provider/seed/seed.js';
import { NOW, seedErrorOf } from '../harness/seed-readers.js';

describe('buildSeed itself', () => {
  const input: SeedInput = { uid: 'u-1', name: 'vm', userData: '#cloud-config\n' };

  it('leaves nothing under the temporary directory', async () => {
    const outer = await mkdtemp(path.join(os.tmpdir(), 'kvm2-seed-tmp-'));
    const fresh = path.join(outer, 'tmp');
    await mkdir(fresh);
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = fresh;
    try {
      expect(os.tmpdir()).toBe(fresh);
      buildSeed(input);
      buildSeed({ ...input, userData: randomBytes(3 * 1024 * 1024), networkConfig: 'a: 1\n' });
      expect(await readdir(fresh)).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
      await rm(outer, { recursive: true, force: true });
    }
  });

  it('is byte-identical with a fixed boundary and time, and differs by boundary otherwise', () => {
    const fixed = { now: NOW, boundary: 'fixed-boundary' };
    expect(buildSeed(input, fixed).equals(buildSeed(input, fixed))).toBe(true);
    expect(buildSeed(input, { now: NOW }).equals(buildSeed(input, { now: NOW }))).toBe(false);
  });

  it('refuses a given boundary that occurs in a part, without quoting the part', () => {
    const part = { contentType: 'text/x-shellscript', content: '#!/bin/sh\n# s3cret-sep\n' };
    const err = seedErrorOf(() =>
      buildSeed({ ...input, vendorData: [part] }, { boundary: 's3cret-sep' }),
    );
    expect([err.code, err.field, err.kind]).toEqual([
      'ERR_SEED_BOUNDARY_IN_CONTENT',
      'boundary',
      'permanent',
    ]);
    expect(err.message).not.toContain('#!/bin/sh');
  });

  it('names the size, never the content, of user-data that does not fit', () => {
    const userData = `#cloud-config\npassword: hunter2\n${'x'.repeat(17 * 1024 * 1024)}`;
    const err = seedErrorOf(() => buildSeed({ ...input, userData }));
    expect(err.code).toBe('ERR_SEED_TOO_LARGE');
    expect(err.message).toContain(`user-data ${Buffer.byteLength(userData)}`);
    expect(err.message).not.toContain('hunter2');
  });

  it('refuses identity fields that cannot be meta-data', () => {
    expect(seedErrorOf(() => buildSeed({ ...input, uid: '' })).field).toBe('uid');
    expect(seedErrorOf(() => buildSeed({ ...input, name: 'a\ud800' })).field).toBe('name');
  });
});
