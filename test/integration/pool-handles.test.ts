// src/provider/core/pools.ts with create: a connection remembers its pool's handle, so a create
// after the first looks no pool up and sends its volume look-ups beside the domain's; a pool
// defined again under the same name (a new UUID) is looked up again inside the create that
// meets it, which still succeeds. Real libvirtd through the harness's sshd, a dir pool of its own.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { newUid } from '../../src/provider/core/ids.js';
import { Provider } from '../../src/provider/provider.js';
import { startImageServer, type ImageServer } from '../harness/image-server.js';
import { domainExists, isolatedNetwork, type TestNetwork } from '../harness/libvirt-objects.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { memoryTracing } from '../harness/telemetry.js';
import { testHost } from '../harness/test-host.js';
import { uniqueName, virsh } from '../harness/virsh.js';

const run = promisify(execFile);

let sshd: Sshd;
let images: ImageServer;
let net: TestNetwork;
let dir: string;
let target: string;
const pool = uniqueName('kvm2-handles').slice(0, 40);

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-handles-'));
  target = fs.mkdtempSync('/var/lib/libvirt/images/kvm2-handles-');
  fs.chmodSync(target, 0o755); // qemu's own user opens the disks in it
  sshd = await startSshd();
  images = await startImageServer();
  net = await isolatedNetwork('kvm2-phnet');
  const image = path.join(dir, 'small.qcow2');
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', image, '64M']);
  images.serve('/small.qcow2', { file: image });
  await definePool();
}, 60_000);

afterAll(async () => {
  await virsh(['pool-destroy', pool]).catch(() => undefined);
  await virsh(['pool-undefine', pool]).catch(() => undefined);
  fs.rmSync(target, { recursive: true, force: true });
  await net?.remove();
  await images?.close();
  await sshd?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function definePool(): Promise<string> {
  await virsh(['pool-define-as', pool, 'dir', '--target', target]);
  await virsh(['pool-start', pool]);
  return (await virsh(['pool-uuid', pool])).trim();
}

it('looks the pool up once per connection, and again inside the create that meets it redefined', async () => {
  const tracing = memoryTracing('pool-handles');
  const provider = new Provider(
    parseConfig({
      hosts: [testHost(sshd, net.name, { pool })],
      images: { small: { url: images.url('/small.qcow2'), format: 'qcow2' } },
      defaults: { vcpus: 1, memoryMiB: 64, diskGiB: 1 },
    }),
    { tracer: tracing.tracer },
  );
  const names = ['a', 'b', 'c', 'd'].map((n) => uniqueName(`kvm2-ph-${n}`));
  const poolLookups = (): number =>
    tracing.exporter.getFinishedSpans().filter((s) => s.name === 'kvm2.StoragePoolLookupByName')
      .length;
  const create = async (name: string): Promise<void> => {
    tracing.exporter.reset();
    const made = await provider.create({ host: 'h1', name, uid: newUid(), image: 'small' });
    expect(made.state).toBe('provisioning');
    expect(await domainExists(name)).toBe(true);
  };
  try {
    // The first fills the image; the second finds it in the pool (the image cache looks the
    // pool up itself) and remembers it; the third is a warm create.
    await create(names[0]!);
    expect(poolLookups()).toBeGreaterThanOrEqual(1);
    await create(names[1]!);
    await create(names[2]!);
    expect(poolLookups()).toBe(0);
    // Its volume look-ups went out beside the domain's, not after it.
    const spans = tracing.exporter.getFinishedSpans();
    const domain = spans.find((s) => s.name === 'kvm2.DomainLookupByName');
    const firstVolume = spans.find((s) => s.name === 'kvm2.StorageVolLookupByName');
    expect(domain && firstVolume).toBeTruthy();
    const ns = ([sec, nano]: readonly [number, number]): number => sec * 1e9 + nano;
    expect(ns(firstVolume!.startTime)).toBeLessThanOrEqual(ns(domain!.endTime));

    // Defined again under the same name and directory: a new UUID, the old handle stale.
    const before = (await virsh(['pool-uuid', pool])).trim();
    await virsh(['pool-destroy', pool]);
    await virsh(['pool-undefine', pool]);
    const after = await definePool();
    expect(after).not.toBe(before);

    await create(names[3]!);
    expect(poolLookups()).toBe(1);
    const volumes = await virsh(['vol-list', pool]);
    for (const name of names) expect(volumes).toContain(name);
  } finally {
    for (const name of names) await provider.delete(`h1/${name}`).catch(() => undefined);
    await provider.close();
  }
  for (const name of names) expect(await domainExists(name)).toBe(false);
});
