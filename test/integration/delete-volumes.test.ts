// delete's volumes against the real libvirtd through the harness's sshd, virsh making the
// domains and volumes and witnessing what is left: a volume another domain still uses is kept,
// and an inactive pool is a transient refusal made before the guest is touched. A throwaway dir
// pool, so that stopping it touches no other test's volumes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { newUid } from '../../src/provider/core/ids.js';
import { Provider } from '../../src/provider/provider.js';
import { buildMetadata } from '../../src/provider/xml/metadata.js';
import { dirPool, domainExists, poolVolumes, type TestPool } from '../harness/libvirt-objects.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { memoryLogger } from '../harness/telemetry.js';
import { testHost } from '../harness/test-host.js';
import { uniqueName, virsh } from '../harness/virsh.js';

const u = uniqueName('dv');
let testPool: TestPool | undefined;
let pool = '';
let sshd: Sshd;
let dir: string;
let provider: Provider;
const domains: string[] = [];
const { logger, lines: logLines } = memoryLogger('info');

/** A kvm2 domain (metadata and all) with these devices, shut off. */
async function defineInstance(name: string, devices = ''): Promise<void> {
  const meta = buildMetadata(
    { uid: newUid(), createdAt: new Date().toISOString(), tag: 'delvol', image: 'none' },
    { namespaced: true },
  );
  const file = path.join(dir, `${name}.xml`);
  fs.writeFileSync(
    file,
    `<domain type='qemu'><name>${name}</name><memory unit='MiB'>32</memory>` +
      `<metadata>${meta}</metadata><os><type arch='x86_64'>hvm</type></os>` +
      `<devices>${devices}</devices></domain>`,
  );
  domains.push(name);
  await virsh(['define', file]);
}

async function makeVolumes(name: string): Promise<void> {
  for (const vol of [`kvm2-${name}.qcow2`, `kvm2-${name}-seed.iso`]) {
    await virsh(['vol-create-as', pool, vol, '1M', '--format', 'raw']);
  }
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-delvol-'));
  const target = path.join(dir, 'pool');
  fs.mkdirSync(target);
  testPool = await dirPool('kvm2-delvol', target);
  pool = testPool.name;
  sshd = await startSshd();
  const config = parseConfig({ hosts: [testHost(sshd, 'kvm2-delvol-unused', { pool })] });
  provider = new Provider(config, { logger });
});

afterAll(async () => {
  await provider?.close();
  for (const d of domains) {
    await virsh(['destroy', d]).catch(() => undefined);
    await virsh(['undefine', d]).catch(() => undefined);
  }
  await testPool?.remove();
  await sshd?.stop();
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
});

describe('delete', () => {
  it('with its domain gone, keeps (with a warning) a volume another domain still uses', async () => {
    const name = `${u}-r`;
    const renamed = `${name}.old`; // `virsh domrename` by hand: the disk goes with the domain
    await makeVolumes(name);
    const overlay = (await virsh(['vol-path', '--pool', pool, `kvm2-${name}.qcow2`])).trim();
    await defineInstance(
      name,
      `<disk type='file' device='disk'><source file='${overlay}'/>` +
        `<target dev='vda' bus='virtio'/></disk>`,
    );
    await virsh(['domrename', name, renamed]);
    domains.splice(domains.indexOf(name), 1, renamed);

    await provider.delete(`h1/${name}`);
    const left = await poolVolumes(pool);
    expect(left).toContain(`kvm2-${name}.qcow2`);
    expect(left).not.toContain(`kvm2-${name}-seed.iso`); // nobody's: deleted
    expect(await virsh(['domblklist', renamed])).toContain(overlay);
    expect(
      logLines.some(
        (l) =>
          l['level'] === 40 &&
          l['volume'] === `kvm2-${name}.qcow2` &&
          JSON.stringify(l['domains']) === JSON.stringify([renamed]),
      ),
    ).toBe(true);
  });

  it('reads every domain on the host, whatever names and depth its metadata has', async () => {
    // Another application's metadata: elements named like Object's own properties, 150 deep.
    const name = `${u}-x`;
    const other = `${u}-xo`;
    const deep = '<level>'.repeat(150) + '</level>'.repeat(150);
    const file = path.join(dir, `${other}.xml`);
    fs.writeFileSync(
      file,
      `<domain type='qemu'><name>${other}</name><memory unit='MiB'>32</memory>` +
        `<metadata><app xmlns='urn:example:app' constructor='1'><__proto__/><toString/>` +
        `${deep}</app></metadata><os><type arch='x86_64'>hvm</type></os></domain>`,
    );
    domains.push(other);
    await virsh(['define', file]);
    expect(await virsh(['dumpxml', other])).toContain('<__proto__/>');
    await makeVolumes(name);

    await provider.delete(`h1/${name}`); // its domain is gone: every domain's disks are read
    const left = await poolVolumes(pool);
    expect(left).not.toContain(`kvm2-${name}.qcow2`);
    expect(left).not.toContain(`kvm2-${name}-seed.iso`);
  });

  it('an inactive pool: transient, the guest left running; after pool-start it goes through', async () => {
    const name = `${u}-p`;
    await makeVolumes(name);
    await defineInstance(name); // no disks: it runs whatever the pool's state
    await virsh(['start', name]);
    await virsh(['pool-destroy', pool]);
    try {
      await expect(provider.delete(`h1/${name}`)).rejects.toMatchObject({
        code: 'ERR_POOL_INACTIVE',
        kind: 'transient',
      });
      expect((await virsh(['domstate', name])).trim()).toBe('running');
    } finally {
      await virsh(['pool-start', pool]);
    }
    await provider.delete(`h1/${name}`);
    expect(await domainExists(name)).toBe(false);
    const left = await poolVolumes(pool);
    expect(left).not.toContain(`kvm2-${name}.qcow2`);
    expect(left).not.toContain(`kvm2-${name}-seed.iso`);
  });
});
