// The provider when the world misbehaves: a pool too small for the image, and libvirtd
// restarted in the middle of a create. Real libvirtd through the harness's sshd.
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { newUid } from '../../src/provider/core/ids.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import { Provider } from '../../src/provider/provider.js';
import { KVM2_XMLNS } from '../../src/provider/xml/metadata.js';
import { startImageServer, type ImageServer } from '../harness/image-server.js';
import { restartLibvirtd } from '../harness/libvirtd.js';
import {
  dirPool,
  domainExists,
  isolatedNetwork,
  poolBases,
  poolVolumes,
  removeBasesSince,
  type TestNetwork,
  type TestPool,
} from '../harness/libvirt-objects.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh } from '../harness/virsh.js';
import { testHost } from '../harness/test-host.js';

const run = promisify(execFile);

let sshd: Sshd;
let images: ImageServer;
let net: TestNetwork;
let dir: string;
let basesBefore: string[] = [];

beforeAll(async () => {
  basesBefore = await poolBases();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-pfaults-'));
  sshd = await startSshd();
  images = await startImageServer();
  net = await isolatedNetwork('kvm2-pfnet');
}, 60_000);

afterAll(async () => {
  await removeBasesSince(basesBefore);
  await net?.remove();
  await images?.close();
  await sshd?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('a pool too small for the image: quota_exceeded before anything is written', async () => {
  // A dir pool on a 4 MiB tmpfs of its own, and a 16 MiB image.
  const mnt = path.join(dir, 'small');
  fs.mkdirSync(mnt);
  await run('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt]);
  let testPool: TestPool | undefined;
  try {
    testPool = await dirPool('kvm2-small', mnt);
    const pool = testPool.name;
    images.serve('/big.raw', { data: crypto.randomBytes(16 << 20) });
    const provider = new Provider(
      parseConfig({
        hosts: [testHost(sshd, net.name, { pool })],
        images: { big: { url: images.url('/big.raw'), format: 'raw' } },
        defaults: { vcpus: 1, memoryMiB: 64, diskGiB: 1 },
      }),
    );
    try {
      const err = await provider
        .create({ host: 'h1', name: 'kvm2-quota', uid: newUid(), image: 'big' })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_POOL_FULL', kind: 'quota_exceeded' });
      expect((err as Error).message).toMatch(/pool '.*' on host 'h1' has \d+ bytes free/);
      expect(await poolVolumes(pool)).toEqual([]);
      expect(fs.readdirSync(mnt)).toEqual([]);
      expect(images.stats('/big.raw').gets).toBe(0); // sized by HEAD, never downloaded
      expect(await domainExists('kvm2-quota')).toBe(false);
    } finally {
      await provider.close();
    }
  } finally {
    await testPool?.remove();
    await run('umount', [mnt]).catch(() => undefined);
  }
});

it('two images that each fit the pool but not both: the second fill is refused before it downloads', async () => {
  // A 40 MiB tmpfs and two 24 MiB images, filled by two creates at once. Each fill's precheck
  // must see the space the other is taking: one create runs, the other is quota_exceeded and
  // its image is never fetched.
  // Where qemu's own user can open the winner's disks (the test's tmp dir is private).
  const mnt = fs.mkdtempSync('/var/lib/libvirt/images/kvm2-two-fills-');
  await run('mount', ['-t', 'tmpfs', '-o', 'size=40m,mode=0755', 'tmpfs', mnt]);
  let testPool: TestPool | undefined;
  const routes = ['/fill-a.raw', '/fill-b.raw'];
  const names = [uniqueName('kvm2-fa'), uniqueName('kvm2-fb')];
  for (const route of routes) images.serve(route, { data: crypto.randomBytes(24 << 20) });
  try {
    testPool = await dirPool('kvm2-two-fills', mnt);
    const provider = new Provider(
      parseConfig({
        hosts: [{ ...testHost(sshd, net.name, { pool: testPool.name }), poolReserve: '1MiB' }],
        images: {
          a: { url: images.url(routes[0] ?? ''), format: 'raw' },
          b: { url: images.url(routes[1] ?? ''), format: 'raw' },
        },
        defaults: { vcpus: 1, memoryMiB: 64, diskGiB: 1 },
      }),
    );
    try {
      const outcomes = await Promise.allSettled(
        ['a', 'b'].map((image, i) =>
          provider.create({ host: 'h1', name: names[i] ?? '', uid: newUid(), image }),
        ),
      );
      const refused = outcomes.flatMap((o, i) =>
        o.status === 'rejected' ? [{ i, err: o.reason as unknown }] : [],
      );
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      expect(refused).toHaveLength(1);
      const loser = refused[0]?.i ?? -1;
      expect(refused[0]?.err).toMatchObject({ code: 'ERR_POOL_FULL', kind: 'quota_exceeded' });
      expect(images.stats(routes[loser] ?? '').gets).toBe(0); // sized by HEAD, never downloaded
      expect(await domainExists(names[loser] ?? '')).toBe(false);
    } finally {
      for (const name of names) await provider.delete(`h1/${name}`).catch(() => undefined);
      await provider.close();
    }
  } finally {
    await testPool?.remove();
    await run('umount', [mnt]).catch(() => undefined);
    fs.rmSync(mnt, { recursive: true, force: true });
  }
}, 60_000);

it('a cached image and no room left for the seed: quota_exceeded, no volume or domain made', async () => {
  // The image is filled first, with room to spare; then the pool's tmpfs is filled up to a
  // few KiB, less than any seed. The create finds the image cached (its space check is the
  // one answered early, beside the volume look-ups) and must refuse before writing a thing.
  const mnt = path.join(dir, 'seedless');
  fs.mkdirSync(mnt);
  await run('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
  let testPool: TestPool | undefined;
  const name = uniqueName('kvm2-seedless');
  const image = path.join(dir, 'seedless.qcow2');
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', image, '64M']);
  images.serve('/seedless.qcow2', { file: image });
  try {
    testPool = await dirPool('kvm2-seedless', mnt);
    const pool = testPool.name;
    const provider = new Provider(
      parseConfig({
        hosts: [{ ...testHost(sshd, net.name, { pool }), poolReserve: '4KiB' }],
        images: { small: { url: images.url('/seedless.qcow2'), format: 'qcow2' } },
        defaults: { vcpus: 1, memoryMiB: 64, diskGiB: 1 },
      }),
    );
    try {
      await ensureBaseImage(provider.ctx, 'h1', 'small', {});
      const free = fs.statfsSync(mnt);
      fs.writeFileSync(path.join(mnt, 'filler'), Buffer.alloc(free.bavail * free.bsize - 8192));
      const before = await poolVolumes(pool);
      expect(before).toContain('filler');
      const err = await provider
        .create({ host: 'h1', name, uid: newUid(), image: 'small' })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_POOL_FULL', kind: 'quota_exceeded' });
      expect((err as Error).message).toMatch(/has \d+ bytes free; image and seed need \d+/);
      expect(await poolVolumes(pool)).toEqual(before);
      expect(await domainExists(name)).toBe(false);
    } finally {
      await provider.close();
    }
  } finally {
    await testPool?.remove();
    await run('umount', [mnt]).catch(() => undefined);
  }
});

it('libvirtd restarted in the middle of a create: transient, and the retry leaves one domain and no leaked volume', async () => {
  const image = path.join(dir, 'img.qcow2');
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', image, '64M']);
  // Pad the file so the download takes several chunks: qcow2 ignores trailing bytes.
  fs.appendFileSync(image, crypto.randomBytes(6 << 20));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  images.serve('/restart.qcow2', {
    file: image,
    stall: { afterBytes: 2 << 20, until: () => released, timeoutMs: 60_000 },
  });
  const provider = new Provider(
    parseConfig({
      hosts: [testHost(sshd, net.name)],
      images: { rs: { url: images.url('/restart.qcow2'), format: 'qcow2' } },
      defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
    }),
  );
  const name = uniqueName('kvm2-rs')
    .replace(/[^a-z0-9-]/g, '')
    .slice(0, 40);
  const uid = newUid();
  try {
    const first = provider.create({ host: 'h1', name, uid, image: 'rs' }).catch((e: unknown) => e);
    // Wait until the image is half way through, then take the daemon away under it.
    const deadline = Date.now() + 20_000;
    while (images.stats('/restart.qcow2').bytesSent < 2 << 20 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await restartLibvirtd();
    release();
    const err = await first;
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ kind: 'transient' });

    const inst = await provider.create({ host: 'h1', name, uid, image: 'rs' });
    expect(inst.uid).toBe(uid);
    expect((await virsh(['domstate', name])).trim()).toBe('running');
    // The domain is the one this create made (its uid), and the only kvm2 instance the run
    // produced: no second name, no stray definition.
    expect(await virsh(['metadata', name, '--uri', KVM2_XMLNS])).toContain(`uid="${uid}"`);
    expect((await provider.listByTag('')).filter((i) => i.uid === uid)).toHaveLength(1);
    const vols = await poolVolumes();
    expect(vols.filter((v) => v.includes(name)).sort()).toEqual(
      [`kvm2-${name}-seed.iso`, `kvm2-${name}.qcow2`].sort(),
    );
    // Exactly one base and one marker for this image: the half-made base did not survive.
    const newBases = vols.filter((v) => v.startsWith('kvm2-base-') && !basesBefore.includes(v));
    expect(newBases).toHaveLength(2);

    await provider.delete(`h1/${name}`);
    expect((await poolVolumes()).filter((v) => v.includes(name))).toEqual([]);
  } finally {
    release();
    await provider.delete(`h1/${name}`).catch(() => undefined);
    await provider.close();
  }
}, 120_000);
