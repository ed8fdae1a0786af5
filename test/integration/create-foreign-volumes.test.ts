// create and the volumes named after an instance that kvm2 did not make for it (SPEC §3: "never
// write over a volume kvm2 did not make for this instance"), against the real libvirtd through
// the harness's sshd, virsh making the domains and volumes and witnessing what is left: with the
// domain absent, an overlay or seed another domain uses is refused and left as it was, and a
// zero-filled volume that is not what kvm2's own overlay upload makes is not written over.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { newUid } from '../../src/provider/core/ids.js';
import type { Provider } from '../../src/provider/provider.js';
import { domainExists, poolVolumes } from '../harness/libvirt-objects.js';
import { providerHooks, providerRig } from '../harness/provider-rig.js';
import { virsh } from '../harness/virsh.js';

const rig = providerRig();
const { imageTag, instanceName } = rig;
let dir: string;
let provider: Provider;

providerHooks(rig, (setup) => ({ dir, provider } = setup));

/** What a volume's file is: its inode, size, mtime and bytes' digest. */
async function fileState(volume: string): Promise<unknown[]> {
  const file = (await virsh(['vol-path', '--pool', 'default', volume])).trim();
  const stat = fs.statSync(file);
  const digest = createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  return [stat.ino, stat.size, stat.mtimeMs, digest];
}

/** A domain of no kvm2's, shut off, whose disk is `file`. */
async function defineForeign(name: string, file: string): Promise<void> {
  const xml = path.join(dir, `${name}.xml`);
  fs.writeFileSync(
    xml,
    `<domain type='qemu'><name>${name}</name><memory unit='MiB'>32</memory>` +
      `<os><type arch='x86_64'>hvm</type></os><devices>` +
      `<disk type='file' device='cdrom'><source file='${file}'/>` +
      `<target dev='sda' bus='sata'/><readonly/></disk></devices></domain>`,
  );
  await virsh(['define', xml]);
}

async function removeDomain(name: string): Promise<void> {
  await virsh(['destroy', name]).catch(() => undefined);
  await virsh(['undefine', '--nvram', name]).catch(() => undefined);
}

describe('with the domain absent, volumes of its name that another domain uses', () => {
  it('a domain renamed by hand keeps its disks: a create under the old name and a new uid is refused, nothing touched', async () => {
    const name = instanceName();
    const renamed = `${name}-old`;
    const overlay = `kvm2-${name}.qcow2`;
    const seed = `kvm2-${name}-seed.iso`;
    await provider.create({ host: 'h1', name, uid: newUid(), image: imageTag });
    await virsh(['destroy', name]);
    await virsh(['domrename', name, renamed]);
    try {
      const disksBefore = await virsh(['domblklist', renamed]);
      const before = [await fileState(overlay), await fileState(seed)];

      const err: unknown = await provider
        .create({ host: 'h1', name, uid: newUid(), image: imageTag })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toMatchObject({ code: 'ERR_FOREIGN_VOLUME', kind: 'permanent' });
      const message = (err as Error).message;
      expect(message).toContain(overlay);
      expect(message).toContain(`'${renamed}'`);

      expect(await domainExists(name)).toBe(false);
      expect([await fileState(overlay), await fileState(seed)]).toEqual(before);
      expect(await virsh(['domblklist', renamed])).toBe(disksBefore);
    } finally {
      await removeDomain(renamed);
    }
  }, 90_000);

  it('a seed another domain uses is refused before anything is made', async () => {
    const name = instanceName();
    const foreign = `${name}-cd`;
    const seed = `kvm2-${name}-seed.iso`;
    await virsh(['vol-create-as', 'default', seed, '1M', '--format', 'raw']);
    const seedPath = (await virsh(['vol-path', '--pool', 'default', seed])).trim();
    await defineForeign(foreign, seedPath);
    try {
      const before = await fileState(seed);
      const err: unknown = await provider
        .create({ host: 'h1', name, uid: newUid(), image: imageTag })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toMatchObject({ code: 'ERR_FOREIGN_VOLUME', kind: 'permanent' });
      expect((err as Error).message).toContain(seed);
      expect((err as Error).message).toContain(`'${foreign}'`);
      expect(await fileState(seed)).toEqual(before);
      expect(await poolVolumes()).not.toContain(`kvm2-${name}.qcow2`);
      expect(await domainExists(name)).toBe(false);
    } finally {
      await removeDomain(foreign);
    }
  }, 60_000);
});

describe('a zero-filled volume named like the overlay', () => {
  it('is written over only when it is what kvm2 uploads: a 1 MiB raw volume is refused, untouched', async () => {
    const name = instanceName();
    const overlay = `kvm2-${name}.qcow2`;
    await virsh(['vol-create-as', 'default', overlay, '1M', '--format', 'raw']);
    const before = await fileState(overlay);
    await expect(
      provider.create({ host: 'h1', name, uid: newUid(), image: imageTag }),
    ).rejects.toMatchObject({ code: 'ERR_FOREIGN_VOLUME', kind: 'permanent' });
    expect(await fileState(overlay)).toEqual(before);
    expect(await domainExists(name)).toBe(false);
    expect(await poolVolumes()).not.toContain(`kvm2-${name}-seed.iso`);
  }, 60_000);
});
