// The real guest through the provider: kvm2's test guest image (docs/guest-image.md) served
// over HTTP like any cloud image, so it goes through the image cache (sha256 verified), then
// create over SSH → the guest boots from the overlay, reads our seed, sets the static
// address from network-config and starts qemu-guest-agent → get reports `running` with the
// agent's address. The serial log proves the guest read the seed. delete removes it all.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { newUid } from '../../src/provider/core/ids.js';
import type { Instance } from '../../src/provider/core/instance.js';
import { Provider } from '../../src/provider/provider.js';
import { ensureGuestImage, type GuestImage } from '../harness/guest-image.js';
import { startImageServer, type ImageServer } from '../harness/image-server.js';
import {
  domainExists,
  isolatedNetwork,
  poolVolumes,
  type TestNetwork,
} from '../harness/libvirt-objects.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh } from '../harness/virsh.js';
import { testHost } from '../harness/test-host.js';
import { DEFAULT_SERIAL_LOG_DIR } from '../../src/provider/config/schema.js';
import { serialLogFile } from '../../src/provider/core/ids.js';

const BOOT_BUDGET_MS = 150_000;

let image: GuestImage;
let sshd: Sshd;
let images: ImageServer;
let net: TestNetwork;
let provider: Provider;
let baseVolume = '';

beforeAll(async () => {
  image = await ensureGuestImage();
  process.stdout.write(
    `[guest-provider] fixture: ${image.cached ? 'cached' : 'built'} (build took ${(image.buildMs / 1000).toFixed(1)} s), ${(image.sizeBytes / 2 ** 20).toFixed(1)} MiB\n`,
  );
  sshd = await startSshd();
  images = await startImageServer();
  images.serve('/guest.qcow2', { file: image.path });
  net = await isolatedNetwork('kvm2-gpnet');
  const sha256 = crypto.createHash('sha256').update(fs.readFileSync(image.path)).digest('hex');
  baseVolume = `kvm2-base-${sha256}.qcow2`;
  provider = new Provider(
    parseConfig({
      hosts: [testHost(sshd, net.name)],
      images: { guest: { url: images.url('/guest.qcow2'), sha256, format: 'qcow2' } },
      defaults: { vcpus: 1, memoryMiB: 256, diskGiB: 1 },
    }),
  );
}, 600_000);

afterAll(async () => {
  await provider?.close();
  await virsh(['vol-delete', '--pool', 'default', baseVolume]).catch(() => undefined);
  await virsh(['vol-delete', '--pool', 'default', `${baseVolume}.sha256`]).catch(() => undefined);
  await net?.remove();
  await images?.close();
  await sshd?.stop();
});

it('create → the guest reads the seed and get reports running with the agent address → delete', async () => {
  const name = uniqueName('kvm2-gp')
    .replace(/[^a-z0-9-]/g, '')
    .slice(0, 40);
  const uid = newUid();
  const address = `192.0.2.${10 + Math.floor(Math.random() * 240)}`;
  const networkConfig = [
    'version: 2',
    'ethernets:',
    '  eth0:',
    '    addresses:',
    `      - ${address}/24`,
    '',
  ].join('\n');
  try {
    const t0 = Date.now();
    const created = await provider.create({
      host: 'h1',
      name,
      uid,
      image: 'guest',
      tag: 'guest-test',
      userData: '#cloud-config\n',
      networkConfig,
    });
    const started = Date.now();
    expect(created.state).toBe('provisioning'); // running, no address yet

    let inst: Instance = created;
    while (inst.address === undefined && Date.now() - started < BOOT_BUDGET_MS) {
      await new Promise((r) => setTimeout(r, 250));
      inst = await provider.get(`h1/${name}`);
    }
    const bootMs = Date.now() - started;
    process.stdout.write(
      `[guest-provider] create took ${((started - t0) / 1000).toFixed(1)} s; start to agent address ${(bootMs / 1000).toFixed(1)} s\n`,
    );
    expect(inst).toMatchObject({ state: 'running', address, uid, name, tag: 'guest-test' });

    const log = fs.readFileSync(serialLogFile(DEFAULT_SERIAL_LOG_DIR, name), 'utf8');
    expect(log).toContain(`kvm2-guest: instance-id=${uid}`);
    expect(log).toContain(`kvm2-guest: hostname=${name}`);
  } finally {
    await provider.delete(`h1/${name}`);
  }
  expect(await domainExists(name)).toBe(false);
  expect((await poolVolumes()).filter((v) => v.includes(name))).toEqual([]);
}, 300_000);
