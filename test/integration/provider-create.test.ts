// The provider's create, get and delete against the real libvirtd through the harness's sshd,
// images from a real HTTP server on port 0, virsh as the independent witness: what a create
// makes, a repeat create that changes nothing, the refusals, and a delete that leaves the base.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { DEFAULT_SERIAL_LOG_DIR } from '../../src/provider/config/schema.js';
import { newUid, serialLogFile } from '../../src/provider/core/ids.js';
import { Provider } from '../../src/provider/provider.js';
import { KVM2_XMLNS } from '../../src/provider/xml/metadata.js';
import type { ImageServer } from '../harness/image-server.js';
import { domainExists, poolVolumes, type TestNetwork } from '../harness/libvirt-objects.js';
import { providerHooks, providerRig, SENTINEL } from '../harness/provider-rig.js';
import type { Sshd } from '../harness/sshd.js';
import { testHost } from '../harness/test-host.js';
import { virsh, virshFails } from '../harness/virsh.js';

const run = promisify(execFile);
const rig = providerRig();
const { imageTag, instanceName, logLines } = rig;
let sshd: Sshd;
let images: ImageServer;
let net: TestNetwork;
let dir: string;
let provider: Provider;

providerHooks(rig, (setup) => ({ sshd, images, net, dir, provider } = setup));

describe('create, get, delete', () => {
  it('creates a running instance: overlay backed by the base, seed read-only, metadata', async () => {
    const name = instanceName();
    const uid = newUid();
    const before = await poolVolumes();
    const inst = await provider.create({
      host: 'h1',
      name,
      uid,
      image: imageTag,
      tag: 'pv-test',
      userData: `#cloud-config\n# ${SENTINEL}\n`,
    });
    expect(inst).toMatchObject({
      id: `h1/${name}`,
      host: 'h1',
      name,
      uid,
      tag: 'pv-test',
      image: imageTag,
    });
    expect(['running', 'provisioning']).toContain(inst.state);
    expect((await virsh(['domstate', name])).trim()).toBe('running');

    const overlay = await virsh(['vol-dumpxml', '--pool', 'default', `kvm2-${name}.qcow2`]);
    const basePath = /<backingStore>\s*<path>([^<]+)<\/path>/.exec(overlay)?.[1];
    expect(basePath).toMatch(/\/kvm2-base-[0-9a-f]{64}\./);
    expect(overlay).toMatch(/<format type='qcow2'\/>/);

    const xml = await virsh(['dumpxml', name]);
    const seedPath = (
      await virsh(['vol-path', '--pool', 'default', `kvm2-${name}-seed.iso`])
    ).trim();
    const seedDisk = new RegExp(
      `<disk type='file' device='disk'>(?:(?!</disk>)[\\s\\S])*<source file='${seedPath}'(?:(?!</disk>)[\\s\\S])*<readonly/>`,
    );
    expect(xml).toMatch(seedDisk);
    const meta = await virsh(['metadata', name, '--uri', KVM2_XMLNS]);
    expect(meta).toContain(`uid="${uid}"`);
    // The serial console's file, by default in libvirt's qemu log directory, made at start.
    const serialLog = serialLogFile(DEFAULT_SERIAL_LOG_DIR, name);
    expect(xml).toContain(`<log file='${serialLog}' append='off'/>`);
    expect(fs.statSync(serialLog).isFile()).toBe(true);

    const after = await poolVolumes();
    const added = after.filter((v) => !before.includes(v));
    expect(added).toEqual(expect.arrayContaining([`kvm2-${name}-seed.iso`, `kvm2-${name}.qcow2`]));

    // get: identity read back from libvirt's metadata
    const got = await provider.get(`h1/${name}`);
    expect(got).toMatchObject({ uid, createdAt: inst.createdAt, tag: 'pv-test', image: imageTag });
    expect(Date.parse(got.createdAt)).toBeGreaterThan(Date.now() - 120_000);

    // a repeat create with the same uid changes nothing: same domain, same files (inode and
    // modification time: a volume deleted and made again would differ)
    const uuidBefore = (await virsh(['domuuid', name])).trim();
    const overlayPath = (
      await virsh(['vol-path', '--pool', 'default', `kvm2-${name}.qcow2`])
    ).trim();
    const fileState = (p: string): string => {
      const st = fs.statSync(p);
      return `${st.ino}:${st.mtimeMs}`;
    };
    const filesBefore = [fileState(overlayPath), fileState(seedPath)];
    const again = await provider.create({ host: 'h1', name, uid, image: imageTag, tag: 'pv-test' });
    expect(again.uid).toBe(uid);
    expect(again.createdAt).toBe(inst.createdAt);
    expect((await virsh(['domuuid', name])).trim()).toBe(uuidBefore);
    expect([fileState(overlayPath), fileState(seedPath)]).toEqual(filesBefore);
    expect(await poolVolumes()).toEqual(after);

    // another uid is refused, and the instance is untouched
    await expect(
      provider.create({ host: 'h1', name, uid: newUid(), image: imageTag }),
    ).rejects.toMatchObject({ code: 'ERR_UID_CONFLICT', kind: 'permanent' });
    expect((await virsh(['domuuid', name])).trim()).toBe(uuidBefore);

    // delete: no domain, no overlay or seed; the base stays; delete again succeeds
    await provider.delete(`h1/${name}`);
    expect(await domainExists(name)).toBe(false);
    const gone = await poolVolumes();
    expect(gone).not.toContain(`kvm2-${name}.qcow2`);
    expect(gone).not.toContain(`kvm2-${name}-seed.iso`);
    expect(gone).toContain(path.basename(basePath!));
    await provider.delete(`h1/${name}`);
    await expect(provider.get(`h1/${name}`)).rejects.toMatchObject({ kind: 'not_found' });
  }, 90_000);

  it('refuses a foreign domain of the same name in create and delete, and leaves it untouched', async () => {
    const name = instanceName();
    const file = path.join(dir, `${name}.xml`);
    fs.writeFileSync(
      file,
      `<domain type='qemu'><name>${name}</name><memory unit='MiB'>32</memory><os><type arch='x86_64'>hvm</type></os></domain>`,
    );
    await virsh(['define', file]);
    try {
      const uuid = (await virsh(['domuuid', name])).trim();
      await expect(
        provider.create({ host: 'h1', name, uid: newUid(), image: imageTag }),
      ).rejects.toMatchObject({ code: 'ERR_FOREIGN_DOMAIN', kind: 'permanent' });
      await expect(provider.delete(`h1/${name}`)).rejects.toMatchObject({
        code: 'ERR_FOREIGN_DOMAIN',
        kind: 'permanent',
      });
      await expect(provider.get(`h1/${name}`)).rejects.toMatchObject({
        code: 'ERR_FOREIGN_DOMAIN',
      });
      expect((await virsh(['domuuid', name])).trim()).toBe(uuid);
      expect(await poolVolumes()).not.toContain(`kvm2-${name}.qcow2`);
    } finally {
      await virsh(['undefine', name]).catch(() => undefined);
    }
  });

  it('rejects bad requests with the field named and nothing made', async () => {
    const before = await poolVolumes();
    await expect(
      provider.create({ host: 'h1', name: 'Bad_Name', uid: newUid(), image: imageTag }),
    ).rejects.toThrow(/request\.name: must be a DNS label/);
    await expect(
      provider.create({ host: 'h1', name: 'ok-name', uid: 'not-a-uid', image: imageTag }),
    ).rejects.toMatchObject({ code: 'ERR_INVALID_REQUEST', kind: 'permanent' });
    await expect(
      provider.create({ host: 'nope', name: 'ok-name', uid: newUid(), image: imageTag }),
    ).rejects.toMatchObject({
      code: 'ERR_UNKNOWN_HOST',
      kind: 'permanent',
      message: "host 'nope' is not in the configuration (hosts: h1)",
    });
    await expect(
      provider.create({ host: 'h1', name: 'ok-name', uid: newUid(), image: 'nope' }),
    ).rejects.toMatchObject({
      code: 'ERR_UNKNOWN_IMAGE',
      kind: 'permanent',
      message: `request.image: image 'nope' is not in the configuration (images: ${imageTag})`,
    });
    expect(await poolVolumes()).toEqual(before);
    expect(await virshFails(['dominfo', 'ok-name'])).toMatch(/failed to get domain/);
  });

  it('refuses a disk larger than an overlay can describe, before any volume is written', async () => {
    const name = instanceName();
    const err: unknown = await provider
      .create({ host: 'h1', name, uid: newUid(), image: imageTag, diskGiB: 5000 })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_INVALID_REQUEST', kind: 'permanent' });
    expect((err as Error).message).toMatch(/request\.diskGiB: must be at most 4 TiB/);
    expect((await poolVolumes()).filter((v) => v.includes(name))).toEqual([]);
  });

  it('a host no longer configured: delete succeeds with a warning', async () => {
    await provider.delete('gone-host/some-vm');
    expect(logLines.some((l) => JSON.stringify(l).includes('host is not configured'))).toBe(true);
  });
});

describe('a disk smaller than its image', () => {
  it('is refused naming request.diskGiB and the image size, before the overlay and seed', async () => {
    const big = path.join(dir, 'big.qcow2');
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', big, '2G']);
    images.serve('/big.qcow2', { file: big });
    const config = parseConfig({
      hosts: [testHost(sshd, net.name)],
      images: { [`${imageTag}-big`]: { url: images.url('/big.qcow2'), format: 'qcow2' } },
      defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
    });
    const p = new Provider(config, { logger: rig.logger });
    const name = instanceName();
    try {
      const request = { host: 'h1', name, uid: newUid(), image: `${imageTag}-big` };
      const err: unknown = await p.create({ ...request, diskGiB: 1 }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_INVALID_REQUEST', kind: 'permanent' });
      expect((err as Error).message).toContain('request.diskGiB');
      expect((err as Error).message).toContain(`${2 ** 31} bytes`);
      // Without diskGiB, the configured default is the one named.
      await expect(p.create(request)).rejects.toThrow(/kvm2\.defaults\.diskGiB/);
      expect((await poolVolumes()).filter((v) => v.includes(name))).toEqual([]);

      // As large as the image is enough: the guest sees the whole of it.
      await p.create({ ...request, diskGiB: 2 });
      const overlay = await virsh(['vol-dumpxml', '--pool', 'default', `kvm2-${name}.qcow2`]);
      expect(overlay).toContain(`<capacity unit='bytes'>${2 ** 31}</capacity>`);
    } finally {
      await p.delete(`h1/${name}`).catch(() => undefined);
      await p.close();
    }
  }, 90_000);
});

describe('a base image this process found complete', () => {
  it('is not read again by the next create; removed behind its back, it is found missing and filled again', async () => {
    const first = instanceName();
    await provider.create({ host: 'h1', name: first, uid: newUid(), image: imageTag });
    rig.exporter.reset();
    const second = instanceName();
    await provider.create({ host: 'h1', name: second, uid: newUid(), image: imageTag });
    const calls = rig.exporter.getFinishedSpans().map((span) => span.name);
    // The marker is read by a volume download (an iohelper on the daemon): not this time.
    expect(calls).not.toContain('kvm2.StorageVolDownload');
    expect(calls.filter((name) => name === 'kvm2.StorageVolCreateXML')).toHaveLength(2);

    // An operator removes the base and its marker (the instances first).
    const overlay = await virsh(['vol-dumpxml', '--pool', 'default', `kvm2-${second}.qcow2`]);
    const basePath = /<backingStore>\s*<path>([^<]+)<\/path>/.exec(overlay)?.[1] ?? '';
    const baseName = path.basename(basePath);
    expect(baseName).toMatch(/^kvm2-base-[0-9a-f]{64}\./);
    await provider.delete(`h1/${first}`);
    await provider.delete(`h1/${second}`);
    await virsh(['vol-delete', '--pool', 'default', baseName]);
    await virsh(['vol-delete', '--pool', 'default', `${baseName}.sha256`]);

    const third = instanceName();
    const inst = await provider.create({ host: 'h1', name: third, uid: newUid(), image: imageTag });
    expect(['running', 'provisioning']).toContain(inst.state);
    expect(await poolVolumes()).toEqual(expect.arrayContaining([baseName, `${baseName}.sha256`]));
    expect(
      logLines.some((l) => l['msg'] === 'a remembered base image was refused; looking again'),
    ).toBe(true);
  }, 120_000);
});

describe("an instance's age", () => {
  // GC's grace counts from createdAt: stamped before a long first download of the image, a
  // fresh instance would be as old as the download was long, and a GC asked while it ran
  // could delete it the moment it booted.
  it('counts from its define, not from before the image was downloaded', async () => {
    const file = path.join(dir, 'slow.qcow2');
    // A size of its own gives the image a digest of its own: never cached before this test.
    const sizeKiB = 32_768 + Math.floor(Math.random() * 100_000);
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', file, `${sizeKiB}K`]);
    const STALL_MS = 3_000;
    let releasedAt = 0;
    images.serve('/slow.qcow2', {
      file,
      stall: {
        afterBytes: 4096,
        until: async () => {
          await new Promise((r) => setTimeout(r, STALL_MS));
          releasedAt = Date.now();
        },
      },
    });
    const slow = new Provider(
      parseConfig({
        hosts: [testHost(sshd, net.name)],
        images: { slow: { url: images.url('/slow.qcow2'), format: 'qcow2' } },
        defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
      }),
    );
    try {
      const name = instanceName();
      const inst = await slow.create({
        host: 'h1',
        name,
        uid: newUid(),
        image: 'slow',
        tag: 'pv-test',
        userData: '#cloud-config\n',
      });
      expect(releasedAt).toBeGreaterThan(0);
      expect(Date.parse(inst.createdAt)).toBeGreaterThanOrEqual(releasedAt);
    } finally {
      await slow.close();
    }
  }, 120_000);
});
