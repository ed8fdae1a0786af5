// What the provider finds on the host and must not undo or cannot use, against the real libvirtd
// through the harness's sshd with virsh as the witness: a domain an administrator paused, an
// overlay volume kvm2 did not make, and the serial log's directory (hosts[].serialLogDir).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { newUid, serialLogFile } from '../../src/provider/core/ids.js';
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
      expect(message).toContain(`${missing}/${name}.serial.log`); // libvirt's own words
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
