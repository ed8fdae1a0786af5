// The seed ISO read by tools that share no code with ours: util-linux blkid (what udev and
// cloud-init's device search see), genisoimage's isoinfo (Joliet and Rock Ridge), libarchive's
// bsdtar, and cloud-init's own Python (Debian's package) on the extracted files. This kernel
// has no iso9660 driver, so nothing is loop-mounted (../shared/HOST-SETUP.md); a guest's
// kernel reads the same bytes in the real-guest tests.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildMetaData,
  buildSeed,
  buildVendorData,
  SEED_LABEL,
  type SeedInput,
  type SeedOptions,
} from '../../src/provider/seed/seed.js';
import {
  bsdtarFiles,
  extract,
  listedNames,
  NOW,
  PYTHON,
  READ_SEEDS_PY,
  run,
  sha256,
} from '../harness/seed-readers.js';

const GOLDEN = fileURLToPath(new URL('../fixtures/seed-golden.txt', import.meta.url));

const MIME_USER_DATA = [
  'Content-Type: multipart/mixed; boundary="user-boundary"',
  'MIME-Version: 1.0',
  '',
  '--user-boundary',
  'Content-Type: text/cloud-config; charset="us-ascii"',
  '',
  '#cloud-config',
  'hostname: from-mime',
  '',
  '--user-boundary',
  'Content-Type: text/x-shellscript; charset="us-ascii"',
  '',
  '#!/bin/sh',
  'echo from-mime',
  '',
  '--user-boundary--',
  '',
].join('\n');

interface SeedCase {
  readonly label: string;
  readonly input: SeedInput;
  readonly options: SeedOptions;
  /** Ask cloud-init to split user-data into MIME parts too. */
  readonly splitUserData?: boolean;
}

const CASES: readonly SeedCase[] = [
  {
    label: 'typical',
    input: {
      uid: 'a3f1c2d4-5b6e-4f70-8a91-b2c3d4e5f607',
      name: 'web-1',
      userData: '#cloud-config\npackages: [nginx]\n',
      networkConfig: 'version: 2\nethernets:\n  eth0:\n    dhcp4: true\n',
    },
    options: {}, // random boundary, timestamp now
  },
  {
    label: 'empty user-data',
    input: { uid: 'u-empty', name: 'empty', userData: Buffer.alloc(0) },
    options: { now: NOW, boundary: 'b-empty' },
  },
  {
    label: 'several MiB of binary user-data',
    input: { uid: 'u-big', name: 'big', userData: randomBytes(5 * 1024 * 1024 + 123) },
    options: { now: NOW },
  },
  {
    label: 'unicode and hostile meta-data',
    input: {
      uid: 'yes',
      name: 'vm: "quoted" #not-a-comment \\ é 😀\n\u0085\u2028next: line',
      userData: '#cloud-config\n# ünïcödé ✓ 😀 \u2028\nruncmd: [[echo, "héllo"]]\n',
      networkConfig: '# réseau 🛰\nversion: 2\nethernets: {}\n',
      vendorData: [
        {
          contentType: 'text/x-shellscript',
          content: '#!/bin/sh\necho ünï 😀\n',
          filename: 'u.sh',
        },
      ],
    },
    options: { now: NOW },
  },
  {
    label: 'user-data that is itself MIME multipart',
    input: { uid: 'u-mime', name: 'mime', userData: MIME_USER_DATA },
    options: { now: NOW },
    splitUserData: true,
  },
];

/** What each case's image must hold, file by file. */
function expectedFiles(c: SeedCase, vendorData: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>([
    ['meta-data', Buffer.from(buildMetaData(c.input.uid, c.input.name))],
    ['user-data', Buffer.from(c.input.userData)],
    ['vendor-data', vendorData],
  ]);
  if (c.input.networkConfig !== undefined) {
    files.set('network-config', Buffer.from(c.input.networkConfig));
  }
  return files;
}

describe('seed ISO read by independent tools', () => {
  let work = '';
  const built: { c: SeedCase; iso: string; files: Map<string, Buffer>; dir: string }[] = [];

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'kvm2-seed-readers-'));
    for (const [i, c] of CASES.entries()) {
      const iso = path.join(work, `case-${i}.iso`);
      await writeFile(iso, buildSeed(c.input, c.options));
      // vendor-data is rebuilt from its own boundary, so a random one is checked too.
      const vendorData = await extract(iso, 'vendor-data', '-R');
      const boundary = /boundary="([^"]+)"/.exec(vendorData.toString())?.[1] ?? '';
      const rebuilt = Buffer.from(buildVendorData(c.input.vendorData ?? [], boundary));
      expect(rebuilt.equals(vendorData), `${c.label}: vendor-data`).toBe(true);
      if (c.options.boundary === undefined) expect(boundary).toMatch(/^kvm2-[0-9a-f]{32}$/);
      built.push({ c, iso, files: expectedFiles(c, vendorData), dir: path.join(work, `x-${i}`) });
    }
  });

  afterAll(async () => {
    if (work !== '') await rm(work, { recursive: true, force: true });
  });

  it('blkid finds an iso9660 filesystem labelled cidata', async () => {
    for (const { c, iso } of built) {
      const out = await run('blkid', ['-p', '-o', 'export', iso]);
      expect(out, c.label).toContain('\nTYPE=iso9660\n');
      expect(out, c.label).toContain(`\nLABEL=${SEED_LABEL}\n`);
    }
  });

  it('isoinfo sees the volume id, Joliet and Rock Ridge', async () => {
    for (const { c, iso } of built) {
      const out = await run('isoinfo', ['-d', '-i', iso]);
      expect(out, c.label).toContain('Volume id: cidata\n');
      expect(out, c.label).toContain('Joliet with UCS level 3 found');
      expect(out, c.label).toContain('Rock Ridge signatures version 1 found');
      expect(out, c.label).toContain('Logical block size is: 2048');
    }
  });

  it('isoinfo lists exactly the expected lowercase names, in Joliet and Rock Ridge', async () => {
    for (const { c, iso, files } of built) {
      const names = [...files.keys()].sort();
      expect(listedNames(await run('isoinfo', ['-J', '-l', '-i', iso])), c.label).toEqual(names);
      expect(listedNames(await run('isoinfo', ['-R', '-l', '-i', iso])), c.label).toEqual(names);
    }
  });

  it('isoinfo extracts every file byte for byte', async () => {
    for (const { c, iso, files } of built) {
      for (const [name, bytes] of files) {
        const viaRockRidge = await extract(iso, name, '-R');
        expect(viaRockRidge.equals(bytes), `${c.label}: ${name}`).toBe(true);
      }
    }
    const first = built[0];
    for (const [name, bytes] of first?.files ?? []) {
      expect((await extract(first?.iso ?? '', name, '-J')).equals(bytes), name).toBe(true);
    }
  });

  it('bsdtar unpacks the same names and bytes', async () => {
    for (const { c, iso, files, dir } of built) {
      const unpacked = await bsdtarFiles(iso, dir);
      expect([...unpacked.keys()], c.label).toEqual([...files.keys()].sort());
      for (const [name, bytes] of files) {
        expect(unpacked.get(name)?.equals(bytes), `${c.label}: ${name}`).toBe(true);
      }
    }
  });

  it("cloud-init's own code reads the unpacked seed", async () => {
    const cloudDir = path.join(work, 'cloud');
    await mkdir(cloudDir);
    const args = {
      cloudDir,
      seeds: built.map((b) => ({ dir: b.dir, splitUserData: b.c.splitUserData === true })),
    };
    const results = JSON.parse(await run(PYTHON, ['-c', READ_SEEDS_PY, JSON.stringify(args)])) as {
      metaData: Record<string, unknown>;
      userDataSha256: string;
      vendorDataSha256: string | null;
      vendorParts: { type: string; filename: string | null; payload: string }[];
      userParts: { type: string; payload: string }[] | null;
      networkConfig: unknown;
    }[];
    expect(results).toHaveLength(built.length);
    for (const [i, { c, files }] of built.entries()) {
      const r = results[i];
      expect(r?.metaData, c.label).toEqual({
        'instance-id': c.input.uid,
        'local-hostname': c.input.name,
      });
      expect(r?.userDataSha256, c.label).toBe(sha256(files.get('user-data') ?? Buffer.alloc(1)));
      expect(r?.vendorDataSha256, c.label).toBe(
        sha256(files.get('vendor-data') ?? Buffer.alloc(1)),
      );
      const agent = r?.vendorParts[0];
      // A vendor script, not cloud-config: user-data's keys cannot replace it (docs/seed.md).
      expect(agent?.type, c.label).toBe('text/x-shellscript');
      expect(agent?.filename).toBe('kvm2-guest-agent.sh');
      expect(agent?.payload.startsWith('#!/bin/sh\n')).toBe(true);
      expect(agent?.payload).toContain('apt-get install -y qemu-guest-agent');
      expect(agent?.payload).toContain('systemctl start qemu-guest-agent');
      const extra = (c.input.vendorData ?? []).map((p) => ({
        type: p.contentType,
        filename: p.filename ?? null,
        payload: p.content,
      }));
      expect(r?.vendorParts.slice(1), c.label).toEqual(extra);
      expect(r?.networkConfig ?? null, c.label).toEqual(
        c.input.networkConfig === undefined ? null : expect.objectContaining({ version: 2 }),
      );
    }
    const mime = results[CASES.findIndex((c) => c.splitUserData === true)];
    expect(mime?.userParts?.map((p) => p.type)).toEqual([
      'text/cloud-config',
      'text/x-shellscript',
    ]);
    expect(mime?.userParts?.[1]?.payload).toBe('#!/bin/sh\necho from-mime\n');
  });
});

describe('golden seed', () => {
  it('keeps its bytes and layout (UPDATE_GOLDEN=1 to accept a change)', async () => {
    const seed = buildSeed(
      {
        uid: '00000000-0000-4000-8000-000000000001',
        name: 'golden',
        userData: '#cloud-config\nhostname: golden\n',
        networkConfig: 'version: 2\nethernets:\n  eth0:\n    dhcp4: true\n',
      },
      { now: NOW, boundary: 'kvm2-golden-boundary' },
    );
    const work = await mkdtemp(path.join(os.tmpdir(), 'kvm2-seed-golden-'));
    try {
      const iso = path.join(work, 'golden.iso');
      await writeFile(iso, seed);
      const utc = { TZ: 'UTC', LC_ALL: 'C' };
      const section = async (title: string, args: string[]): Promise<string> =>
        `## ${title}\n${(await run('isoinfo', [...args, '-i', iso], utc)).trim()}\n`;
      const actual = [
        '# A fixed seed: buildSeed() with fixed uid, name, user-data, network-config, boundary',
        '# and time (test/integration/seed-readers.test.ts). Regenerate after an intended change:',
        '#   UPDATE_GOLDEN=1 npx vitest run test/integration/seed-readers.test.ts',
        `sha256 ${sha256(seed)}`,
        `bytes ${seed.length}`,
        '',
        await section('isoinfo -d', ['-d']),
        await section('isoinfo -l (level-1 names)', ['-l']),
        await section('isoinfo -R -l (Rock Ridge)', ['-R', '-l']),
        await section('isoinfo -J -l (Joliet)', ['-J', '-l']),
        await section('meta-data', ['-R', '-x', '/meta-data']),
        await section('vendor-data', ['-R', '-x', '/vendor-data']),
      ]
        .join('\n')
        .replace(/[ \t]+$/gm, '');
      if (process.env.UPDATE_GOLDEN === '1') await writeFile(GOLDEN, actual);
      const expected = await readFile(GOLDEN, 'utf8').catch(() => '(missing)');
      expect(
        actual,
        'The seed ISO changed. If that is intended, run ' +
          'UPDATE_GOLDEN=1 npx vitest run test/integration/seed-readers.test.ts ' +
          'and review the diff of test/fixtures/seed-golden.txt.',
      ).toBe(expected);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});
