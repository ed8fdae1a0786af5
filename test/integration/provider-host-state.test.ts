// What the provider finds on the host and must not undo or cannot use, against the real libvirtd
// through the harness's sshd with virsh as the witness: a domain an administrator paused, an
// overlay volume kvm2 did not make, one an earlier attempt left unfinished, and the serial
// log's directory (hosts[].serialLogDir).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { newUid, serialLogFile } from '../../src/provider/core/ids.js';
import { OVERLAY_BYTES, qcow2Overlay } from '../../src/provider/image/qcow2-overlay.js';
import { Provider } from '../../src/provider/provider.js';
import type { ImageServer } from '../harness/image-server.js';
import { domainExists, poolVolumes, type TestNetwork } from '../harness/libvirt-objects.js';
import { providerHooks, providerRig } from '../harness/provider-rig.js';
import type { Sshd } from '../harness/sshd.js';
import { testHost } from '../harness/test-host.js';
import { virsh } from '../harness/virsh.js';

const rig = providerRig();
const { imageTag, instanceName, logger, tracerProvider } = rig;
let sshd: Sshd;
let images: ImageServer;
let net: TestNetwork;
let dir: string;
let provider: Provider;

providerHooks(rig, (setup) => ({ sshd, images, net, dir, provider } = setup));

describe('what an administrator did is not undone', () => {
  it('a domain paused by an administrator is not resumed by a repeat create: permanent', async () => {
    const name = instanceName();
    const uid = newUid();
    await provider.create({ host: 'h1', name, uid, image: imageTag });
    await virsh(['suspend', name]);
    try {
      await expect(
        provider.create({ host: 'h1', name, uid, image: imageTag }),
      ).rejects.toMatchObject({ code: 'ERR_DOMAIN_NOT_RUNNING', kind: 'permanent' });
      expect((await virsh(['domstate', name])).trim()).toBe('paused');
    } finally {
      await provider.delete(`h1/${name}`);
    }
  }, 60_000);

  it('an overlay volume kvm2 did not make for this image is never written over: permanent', async () => {
    const name = instanceName();
    await virsh(['vol-create-as', 'default', `kvm2-${name}.qcow2`, '16M', '--format', 'qcow2']);
    const overlayPath = (
      await virsh(['vol-path', '--pool', 'default', `kvm2-${name}.qcow2`])
    ).trim();
    const before = fs.statSync(overlayPath);
    try {
      await expect(
        provider.create({ host: 'h1', name, uid: newUid(), image: imageTag }),
      ).rejects.toMatchObject({ code: 'ERR_FOREIGN_VOLUME', kind: 'permanent' });
      const after = fs.statSync(overlayPath);
      expect([after.ino, after.mtimeMs, after.size]).toEqual([
        before.ino,
        before.mtimeMs,
        before.size,
      ]);
      expect(await domainExists(name)).toBe(false);
    } finally {
      await virsh(['vol-delete', '--pool', 'default', `kvm2-${name}.qcow2`]).catch(() => undefined);
      await virsh(['vol-delete', '--pool', 'default', `kvm2-${name}-seed.iso`]).catch(
        () => undefined,
      );
    }
  });
});

describe('an overlay an earlier attempt left behind (kvm2 writes its overlays, docs/provider.md)', () => {
  const run = promisify(execFile);

  /** qemu-img's reading of a file (-U: a running guest holds it). */
  async function imageInfo(file: string): Promise<Record<string, unknown>> {
    const { stdout } = await run('qemu-img', ['info', '--output=json', '-U', file]);
    return JSON.parse(stdout) as Record<string, unknown>;
  }

  /** A raw volume `kvm2-<name>.qcow2` of the overlay's size holding `bytes` (or only zeros). */
  async function leftOverlay(name: string, bytes?: Buffer): Promise<string> {
    const vol = `kvm2-${name}.qcow2`;
    await virsh(['vol-create-as', 'default', vol, String(OVERLAY_BYTES), '--format', 'raw']);
    if (bytes !== undefined) {
      const file = path.join(dir, `${name}.part`);
      fs.writeFileSync(file, bytes);
      await virsh(['vol-upload', '--pool', 'default', vol, file]);
    }
    return (await virsh(['vol-path', '--pool', 'default', vol])).trim();
  }

  it('an unfinished upload is written again and boots; a whole one is taken; another is refused', async () => {
    // A first create: its overlay says what kvm2 writes over this base.
    const first = instanceName();
    await provider.create({ host: 'h1', name: first, uid: newUid(), image: imageTag });
    const made = await imageInfo(
      (await virsh(['vol-path', '--pool', 'default', `kvm2-${first}.qcow2`])).trim(),
    );
    await provider.delete(`h1/${first}`);
    const base = String(made['backing-filename']);
    const format = made['backing-filename-format'] === 'raw' ? 'raw' : 'qcow2';
    const whole = qcow2Overlay({
      virtualBytes: BigInt(Number(made['virtual-size'])),
      backingPath: base,
      backingFormat: format,
    });

    const cases = [
      ['nothing uploaded', undefined],
      ['the first 100,000 bytes uploaded', whole.subarray(0, 100_000)],
      ['all of it uploaded', whole],
    ] as const;
    for (const [what, bytes] of cases) {
      const name = instanceName();
      const file = await leftOverlay(name, bytes);
      const inode = fs.statSync(file).ino;
      try {
        const inst = await provider.create({ host: 'h1', name, uid: newUid(), image: imageTag });
        expect(inst.state, what).not.toBe('stopped');
        expect((await virsh(['domstate', name])).trim(), what).toBe('running');
        // The same volume, now kvm2's overlay of this base.
        expect(fs.statSync(file).ino, what).toBe(inode);
        expect(await imageInfo(file), what).toMatchObject({
          format: 'qcow2',
          'backing-filename': base,
          'backing-filename-format': format,
        });
      } finally {
        await provider.delete(`h1/${name}`);
      }
      expect(await poolVolumes(), what).not.toContain(`kvm2-${name}.qcow2`);
    }

    // An overlay of another backing file is not this instance's: never written over.
    const name = instanceName();
    const other = qcow2Overlay({
      virtualBytes: 2n ** 30n,
      backingPath: `${base}.other`,
      backingFormat: format,
    });
    const file = await leftOverlay(name, other);
    try {
      await expect(
        provider.create({ host: 'h1', name, uid: newUid(), image: imageTag }),
      ).rejects.toMatchObject({ code: 'ERR_FOREIGN_VOLUME', kind: 'permanent' });
      expect(fs.readFileSync(file).equals(other)).toBe(true);
      expect(await domainExists(name)).toBe(false);
    } finally {
      await virsh(['vol-delete', '--pool', 'default', `kvm2-${name}.qcow2`]).catch(() => undefined);
      await virsh(['vol-delete', '--pool', 'default', `kvm2-${name}-seed.iso`]).catch(
        () => undefined,
      );
    }
  }, 180_000);
});

describe('a start libvirt refuses', () => {
  it('a bridge that does not exist: the domain is not left defined, and the fixed setting takes at the retry', async () => {
    const withHost = (host: Record<string, unknown>): Provider =>
      new Provider(
        parseConfig({
          hosts: [host],
          images: { [imageTag]: { url: images.url('/tiny.qcow2'), format: 'qcow2' } },
          defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
        }),
        { logger, tracer: tracerProvider.getTracer('test') },
      );
    const { network: _network, ...host } = testHost(sshd, net.name);
    const broken = withHost({ ...host, bridge: 'kvm2nobr0' });
    const fixed = withHost(testHost(sshd, net.name));
    const name = instanceName();
    const uid = newUid();
    try {
      // The XML names the bridge; libvirt defines it, and refuses to start it.
      const err: unknown = await broken.create({ host: 'h1', name, uid, image: imageTag }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/kvm2nobr0/);
      // Left defined, every retry would adopt it and start it with the old XML, whatever the
      // configuration says by then.
      expect(await domainExists(name)).toBe(false);

      // The operator fixes the host's setting; the job's retry (same uid) goes through.
      await fixed.create({ host: 'h1', name, uid, image: imageTag });
      expect((await virsh(['domstate', name])).trim()).toBe('running');
      expect(await virsh(['dumpxml', name])).toContain(`network='${net.name}'`);
    } finally {
      await fixed.delete(`h1/${name}`).catch(() => undefined);
      await Promise.all([broken.close(), fixed.close()]);
    }
  }, 90_000);
});

describe("a former domain's UEFI variables", () => {
  it('a varstore left under the name is not reused: the new instance starts with fresh ones', async () => {
    // libvirt names the varstore by the domain's name and reuses a file it finds there (a
    // renamed domain's, a failed undefine's): here one the firmware cannot even use.
    const name = instanceName();
    const varstore = `/var/lib/libvirt/qemu/nvram/${name}_VARS.fd`;
    fs.writeFileSync(varstore, Buffer.from([0x42]));
    try {
      await provider.create({ host: 'h1', name, uid: newUid(), image: imageTag });
      expect((await virsh(['domstate', name])).trim()).toBe('running');
      expect(fs.statSync(varstore).size).toBeGreaterThan(1);
    } finally {
      await provider.delete(`h1/${name}`).catch(() => undefined);
      fs.rmSync(varstore, { force: true });
    }
  }, 60_000);
});

describe('the serial log (hosts[].serialLogDir, docs/configuration.md)', () => {
  /** A provider on the same host, sshd and image whose host has this serialLogDir. */
  function providerWith(serialLogDir: string): Provider {
    const config = parseConfig({
      hosts: [testHost(sshd, net.name, { serialLogDir })],
      images: { [imageTag]: { url: images.url('/tiny.qcow2'), format: 'qcow2' } },
      defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
    });
    return new Provider(config, { logger, tracer: tracerProvider.getTracer('test') });
  }

  it('a host without the directory: ERR_SERIAL_LOG (permanent) naming the setting, and nothing left behind', async () => {
    const missing = path.join(dir, 'no-such-log-dir');
    const p = providerWith(missing);
    const name = instanceName();
    const before = await poolVolumes();
    try {
      const err: unknown = await p
        .create({ host: 'h1', name, uid: newUid(), image: imageTag })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toMatchObject({ code: 'ERR_SERIAL_LOG', kind: 'permanent' });
      const message = (err as Error).message;
      expect(message).toContain('kvm2.hosts[0].serialLogDir');
      expect(message).toContain(serialLogFile(missing, name)); // libvirt's own words
      expect(message).toContain("host 'h1'");
      // The domain and the volumes the create made for it are gone again.
      expect(await domainExists(name)).toBe(false);
      expect((await poolVolumes()).filter((v) => !before.includes(v))).toEqual([]);
      expect(fs.existsSync(missing)).toBe(false);

      // Once the directory is there, the same create goes through.
      fs.mkdirSync(missing);
      await p.create({ host: 'h1', name, uid: newUid(), image: imageTag });
      expect((await virsh(['domstate', name])).trim()).toBe('running');
      expect(fs.existsSync(serialLogFile(missing, name))).toBe(true);
    } finally {
      await p.delete(`h1/${name}`).catch(() => undefined);
      await p.close();
    }
  }, 60_000);

  it('none: no file behind the console, and the create runs', async () => {
    const p = providerWith('none');
    const name = instanceName();
    try {
      await p.create({ host: 'h1', name, uid: newUid(), image: imageTag });
      expect((await virsh(['domstate', name])).trim()).toBe('running');
      const xml = await virsh(['dumpxml', name]);
      expect(xml).toMatch(/<serial type='pty'>/);
      expect(xml).not.toContain('<log ');
    } finally {
      await p.delete(`h1/${name}`).catch(() => undefined);
      await p.close();
    }
  }, 60_000);
});
