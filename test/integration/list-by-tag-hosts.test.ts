// listByTag across host entries that reach one libvirtd by two routes the configuration cannot
// tell apart (the daemon's socket and a symlink to it):
// each domain would be listed once per entry, and GC keeping one id would delete the other.
// The call fails whole instead, naming both ids.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { newUid } from '../../src/provider/core/ids.js';
import { Provider } from '../../src/provider/provider.js';
import { buildMetadata } from '../../src/provider/xml/metadata.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { testHost } from '../harness/test-host.js';
import { uniqueName, virsh } from '../harness/virsh.js';

const name = uniqueName('lbt').replace(/[^a-z0-9-]/g, '');
const tag = uniqueName('twice');
const uid = newUid();
let sshd: Sshd;
let dir: string;
let twice: Provider;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-lbt-'));
  const meta = buildMetadata(
    { uid, createdAt: '2020-01-01T00:00:00.000Z', tag, image: 'none' },
    { namespaced: true },
  );
  const file = path.join(dir, 'domain.xml');
  fs.writeFileSync(
    file,
    `<domain type='qemu'><name>${name}</name><memory unit='MiB'>32</memory>` +
      `<metadata>${meta}</metadata><os><type arch='x86_64'>hvm</type></os></domain>`,
  );
  await virsh(['define', file]);
  sshd = await startSshd();
  // One daemon under a name the configuration cannot see through: a symlink to its socket.
  const link = path.join(dir, 'libvirt-sock');
  fs.symlinkSync('/run/libvirt/libvirt-sock', link);
  const viaLink = sshd.uri('/system', { socket: link });
  twice = new Provider(
    parseConfig({
      hosts: [
        testHost(sshd, 'kvm2-lbt-unused'),
        testHost(sshd, 'kvm2-lbt-unused', { name: 'h2', uri: viaLink }),
      ],
    }),
  );
});

afterAll(async () => {
  await twice?.close();
  await virsh(['undefine', name]).catch(() => undefined);
  await sshd?.stop();
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
});

it('fails whole when one instance is listed under two hosts', async () => {
  const err: unknown = await twice.listByTag(tag).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toMatchObject({ code: 'ERR_DUPLICATE_INSTANCE', kind: 'transient' });
  expect((err as Error).message).toContain(`h1/${name}`);
  expect((err as Error).message).toContain(`h2/${name}`);
  expect((err as Error).message).toContain(uid);
});

it('lists it once from either entry alone', async () => {
  for (const host of ['h1', 'h2']) {
    // Other test files' instances share the daemon: only this one's name is looked at.
    const listed = (await twice.listHost(host)).filter((i) => i.name === name);
    expect(listed.map((i) => `${i.id} ${i.uid}`)).toEqual([`${host}/${name} ${uid}`]);
  }
});
