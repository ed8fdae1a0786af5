// A base image this process remembers as complete, and its marker gone (docs/image-cache.md:
// an operator deleted base and marker, and a fill, of another process, has made the base again
// and not yet its marker, which it writes last). The create must not take that base: it waits
// for the fill lock, or fills the image itself. Real libvirtd through the harness's sshd, virsh
// playing the operator and the other process's fill, the provider's own locks its fill lock.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { newUid } from '../../src/provider/core/ids.js';
import { findBaseImage, rememberedBaseImage } from '../../src/provider/image/cache.js';
import type { Provider } from '../../src/provider/provider.js';
import { domainExists, poolVolumes } from '../harness/libvirt-objects.js';
import { providerHooks, providerRig } from '../harness/provider-rig.js';
import { virsh } from '../harness/virsh.js';

const rig = providerRig();
const { imageTag, instanceName, logLines } = rig;
let dir: string;
let provider: Provider;

providerHooks(rig, (setup) => ({ dir, provider } = setup));

/** The base's file's path, from an instance's overlay. */
async function basePathOf(name: string): Promise<string> {
  const overlay = await virsh(['vol-dumpxml', '--pool', 'default', `kvm2-${name}.qcow2`]);
  const basePath = /<backingStore>\s*<path>([^<]+)<\/path>/.exec(overlay)?.[1] ?? '';
  expect(path.basename(basePath)).toMatch(/^kvm2-base-[0-9a-f]{64}\.qcow2$/);
  return basePath;
}

const digest = (file: string): string =>
  createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/**
 * A base this process remembers: a create has it (filled or found), a look-up finds it complete
 * (as a create's cache hit does), and the instance is deleted again.
 */
async function rememberedBase(): Promise<{ readonly basePath: string; readonly base: string }> {
  const name = instanceName();
  await provider.create({ host: 'h1', name, uid: newUid(), image: imageTag });
  const basePath = await basePathOf(name);
  await provider.delete(`h1/${name}`);
  await findBaseImage(provider.ctx, 'h1', imageTag, {});
  expect(rememberedBaseImage(provider.ctx, 'h1', imageTag)?.path).toBe(basePath);
  return { basePath, base: path.basename(basePath) };
}

describe('a remembered base whose marker is gone', () => {
  it('made again by a fill under way, is not taken: the create waits for that fill', async () => {
    const image = path.join(dir, 'tiny.qcow2');
    const { basePath, base } = await rememberedBase();
    // The operator removes both; another process's fill takes the lock and makes the base.
    await virsh(['vol-delete', '--pool', 'default', `${base}.sha256`]);
    await virsh(['vol-delete', '--pool', 'default', base]);
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked = (): void => undefined;
    const inLock = new Promise<void>((resolve) => (locked = resolve));
    const filler = provider.ctx.locks.withLock(`image:h1:${base}`, async () => {
      locked();
      await held;
    });
    await inLock;
    try {
      const size = String(fs.statSync(image).size);
      await virsh(['vol-create-as', 'default', base, size, '--format', 'raw']);

      const name = instanceName();
      let settled = false;
      const creating = provider
        .create({ host: 'h1', name, uid: newUid(), image: imageTag })
        .finally(() => (settled = true));
      creating.catch(() => undefined);
      await sleep(3_000);
      expect(settled).toBe(false);
      expect(await domainExists(name)).toBe(false);

      // The other fill finishes: the bytes, a refresh, the marker last; then its lock goes.
      await virsh(['vol-upload', '--pool', 'default', base, image]);
      await virsh(['pool-refresh', 'default']);
      const marker = path.join(dir, 'marker');
      fs.writeFileSync(marker, digest(image));
      await virsh(['vol-create-as', 'default', `${base}.sha256`, '64', '--format', 'raw']);
      await virsh(['vol-upload', '--pool', 'default', `${base}.sha256`, marker]);
      release();
      await filler;

      const inst = await creating;
      expect(['running', 'provisioning']).toContain(inst.state);
      expect((await virsh(['domstate', name])).trim()).toBe('running');
      expect(await basePathOf(name)).toBe(basePath);
      expect(digest(basePath)).toBe(digest(image));
    } finally {
      release();
      await filler;
    }
  }, 120_000);

  it('is not taken: the create fills the image again', async () => {
    const image = path.join(dir, 'tiny.qcow2');
    const { basePath, base } = await rememberedBase();
    await virsh(['vol-delete', '--pool', 'default', `${base}.sha256`]);

    const name = instanceName();
    const inst = await provider.create({ host: 'h1', name, uid: newUid(), image: imageTag });
    expect(['running', 'provisioning']).toContain(inst.state);
    expect(await poolVolumes()).toEqual(expect.arrayContaining([base, `${base}.sha256`]));
    expect(await basePathOf(name)).toBe(basePath);
    expect(digest(basePath)).toBe(digest(image));
    expect(
      logLines.some((l) => l['msg'] === 'removing image cache debris' && l['volume'] === base),
    ).toBe(true);
  }, 120_000);
});
