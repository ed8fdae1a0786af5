// GC's orphan-volume sweep against the real libvirtd through the harness's sshd, virsh making
// the volumes and domains and witnessing what is left. The volumes live in a throwaway dir pool:
// a sweep with no grace period in `default` would also take volumes of creates that other runs
// have in flight on this libvirtd.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import { Kvm2Error } from '../../src/errors/error.js';
import { InProcessLocks, type KeyedLocks } from '../../src/provider/core/keyed-locks.js';
import { Provider } from '../../src/provider/provider.js';
import { dirPool, poolVolumes, type TestPool } from '../harness/libvirt-objects.js';
import { freePort, startSshd, type Sshd } from '../harness/sshd.js';
import { testHost } from '../harness/test-host.js';
import { uniqueName, virsh } from '../harness/virsh.js';
import { memoryLogger, memoryTracing } from '../harness/telemetry.js';

/** The instance locks, with two faults: keys that are busy (as a worker's locks throw), and a
 *  hook that sees each request before it waits. */
class TestLocks implements KeyedLocks {
  readonly inner = new InProcessLocks();
  readonly busy = new Set<string>();
  onRequest: ((key: string) => void) | undefined;

  withLock<T>(
    key: string,
    fn: (signal: AbortSignal) => Promise<T>,
    options?: { signal?: AbortSignal | undefined },
  ): Promise<T> {
    this.onRequest?.(key);
    if (this.busy.has(key)) {
      return Promise.reject(new Kvm2Error('ERR_LOCK_BUSY', `'${key}' is busy`));
    }
    return this.inner.withLock(key, fn, options);
  }
}

const u = uniqueName('sw');
let testPool: TestPool | undefined;
let pool = '';
const HOUR = 3_600_000;
let sshd: Sshd;
let dir: string;
let provider: Provider;
const locks = new TestLocks();
const domains: string[] = [];
const { exporter, tracerProvider } = memoryTracing('test');
const { logger, lines: logLines } = memoryLogger('info');

// beforeAll's volumes: made old, then (after a pause) young.
const orphan = `${u}-o`;
const lone = `${u}-s`;
const young = `${u}-y`;
const foreign = `${u}-f`;
const vols = {
  orphanOverlay: `kvm2-${orphan}.qcow2`,
  orphanSeed: `kvm2-${orphan}-seed.iso`,
  loneSeed: `kvm2-${lone}-seed.iso`,
  foreignOverlay: `kvm2-${foreign}.qcow2`,
  foreignSeed: `kvm2-${foreign}-seed.iso`,
  other: `other-${u}.qcow2`,
  base: `kvm2-base-${randomBytes(32).toString('hex')}.qcow2`,
  youngOverlay: `kvm2-${young}.qcow2`,
};
let oldMadeBy = 0;
let youngMadeFrom = 0;
let foreignXml = '';

async function makeVolume(name: string): Promise<void> {
  await virsh(['vol-create-as', pool, name, '1M', '--format', 'raw']);
}

/** A shut-off domain without kvm2 metadata, with `devices`: foreign, never to be touched. */
async function defineForeignDomain(name: string, devices = ''): Promise<void> {
  const file = path.join(dir, `${name}.xml`);
  fs.writeFileSync(
    file,
    `<domain type='qemu'><name>${name}</name><memory unit='MiB'>32</memory>` +
      `<os><type arch='x86_64'>hvm</type></os><devices>${devices}</devices></domain>`,
  );
  domains.push(name);
  await virsh(['define', file]);
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-sweep-'));
  const target = path.join(dir, 'pool');
  fs.mkdirSync(target);
  testPool = await dirPool('kvm2-sweep', target);
  pool = testPool.name;
  sshd = await startSshd();
  const config = parseConfig({
    // The sweep never reads the network; the name only has to parse.
    hosts: [testHost(sshd, 'kvm2-sweep-unused', { pool })],
    images: {},
  });
  provider = new Provider(config, { locks, logger, tracer: tracerProvider.getTracer('test') });

  for (const name of [
    vols.orphanOverlay,
    vols.orphanSeed,
    vols.loneSeed,
    vols.foreignOverlay,
    vols.foreignSeed,
    vols.other,
    vols.base,
  ]) {
    await makeVolume(name);
  }
  await defineForeignDomain(foreign);
  foreignXml = await virsh(['dumpxml', foreign]);
  oldMadeBy = Date.now();
  await sleep(1_500);
  youngMadeFrom = Date.now();
  await makeVolume(vols.youngOverlay);
});

afterAll(async () => {
  await provider?.close();
  for (const d of domains) await virsh(['undefine', d]).catch(() => undefined);
  await testPool?.remove();
  await sshd?.stop();
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
});

describe('sweepOrphanVolumes', () => {
  it('keeps every volume younger than the grace period', async () => {
    const before = await poolVolumes(pool);
    const report = await provider.sweepOrphanVolumes('h1', { olderThanMs: HOUR });
    expect(report).toEqual({ host: 'h1', removed: [], skipped: [], kept: 6 });
    expect(await poolVolumes(pool)).toEqual(before);
  });

  it('deletes old orphan overlays and seeds; keeps the young, the owned, the foreign', async () => {
    const now = Date.now();
    // The grace period ends halfway between the old volumes and the young one.
    const olderThanMs = now - (oldMadeBy + youngMadeFrom) / 2;
    exporter.reset();
    const report = await provider.sweepOrphanVolumes('h1', { olderThanMs, now });
    expect(report).toEqual({
      host: 'h1',
      removed: [vols.orphanOverlay, vols.orphanSeed, vols.loneSeed].sort(),
      skipped: [],
      kept: 3, // the foreign domain's two volumes and the young overlay
    });
    expect(await poolVolumes(pool)).toEqual(
      [vols.foreignOverlay, vols.foreignSeed, vols.other, vols.base, vols.youngOverlay].sort(),
    );
    // The foreign domain is exactly as it was.
    expect((await virsh(['domstate', foreign])).trim()).toBe('shut off');
    expect(await virsh(['dumpxml', foreign])).toBe(foreignXml);

    const span = exporter.getFinishedSpans().find((s) => s.name === 'provider.sweep');
    expect(span?.attributes).toMatchObject({
      'kvm2.host': 'h1',
      'kvm2.sweep.removed': 3,
      'kvm2.sweep.kept': 3,
    });
    const line = logLines.findLast((l) => l.msg === 'sweep: orphan volumes');
    expect(line).toMatchObject({ level: 30, host: 'h1', removed: 3, skipped: 0, kept: 3 });
  });

  it('skips a volume whose instance lock is busy, with the reason, and goes on', async () => {
    const busy = `${u}-b`;
    const free = `${u}-r`;
    await makeVolume(`kvm2-${busy}.qcow2`);
    await makeVolume(`kvm2-${free}-seed.iso`);
    locks.busy.add(`instance:h1/${busy}`);
    try {
      const report = await provider.sweepOrphanVolumes('h1', { olderThanMs: 0 });
      expect(report.skipped.map((s) => s.volume)).toEqual([`kvm2-${busy}.qcow2`]);
      expect(report.skipped[0]?.reason).toMatch(/^ERR_LOCK_BUSY: /);
      expect(report.removed).toContain(`kvm2-${free}-seed.iso`);
    } finally {
      locks.busy.clear();
    }
    const left = await poolVolumes(pool);
    expect(left).toContain(`kvm2-${busy}.qcow2`);
    expect(left).not.toContain(`kvm2-${free}-seed.iso`);
  });

  it('keeps a volume whose domain was defined while the sweep waited for the lock', async () => {
    const racing = `${u}-c`;
    const key = `instance:h1/${racing}`;
    await makeVolume(`kvm2-${racing}.qcow2`);
    // A create holds the lock: it defines its domain while the sweep waits.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held = locks.withLock(key, () => gate);
    let waited = false;
    locks.onRequest = (k) => {
      if (k !== key) return;
      waited = true;
      void defineForeignDomain(racing).finally(() => release());
    };
    try {
      const report = await provider.sweepOrphanVolumes('h1', { olderThanMs: 0 });
      expect(waited).toBe(true);
      expect(report.removed).not.toContain(`kvm2-${racing}.qcow2`);
      expect(report.skipped).toEqual([]);
    } finally {
      locks.onRequest = undefined;
      release();
      await held;
    }
    expect(await poolVolumes(pool)).toContain(`kvm2-${racing}.qcow2`);
    expect((await virsh(['domstate', racing])).trim()).toBe('shut off');
  });

  it('keeps, with a warning, volumes another domain uses: a renamed kvm2 domain, a foreign one', async () => {
    const renamed = `${u}-n`; // its domain renamed by hand: `kvm2-<name>` names no domain now
    const lent = `${u}-l`; // its seed attached (by pool and volume) to a foreign domain
    const lone = `${u}-m`; // nobody's: deleted
    const borrower = `${u}-g`;
    await makeVolume(`kvm2-${renamed}.qcow2`);
    await makeVolume(`kvm2-${lent}-seed.iso`);
    await makeVolume(`kvm2-${lone}.qcow2`);
    const overlayPath = (await virsh(['vol-path', '--pool', pool, `kvm2-${renamed}.qcow2`])).trim();
    await defineForeignDomain(
      renamed,
      `<disk type='file' device='disk'><source file='${overlayPath}'/>` +
        `<target dev='vda' bus='virtio'/></disk>`,
    );
    await virsh(['domrename', renamed, `${renamed}.old`]);
    domains.splice(domains.indexOf(renamed), 1, `${renamed}.old`);
    await defineForeignDomain(
      borrower,
      `<disk type='volume' device='cdrom'><source pool='${pool}' volume='kvm2-${lent}-seed.iso'/>` +
        `<target dev='sda' bus='sata'/><readonly/></disk>`,
    );

    const report = await provider.sweepOrphanVolumes('h1', { olderThanMs: 0 });
    expect(report.removed).toContain(`kvm2-${lone}.qcow2`);
    expect(report.removed).not.toContain(`kvm2-${renamed}.qcow2`);
    expect(report.removed).not.toContain(`kvm2-${lent}-seed.iso`);
    expect(report.skipped).toEqual(
      expect.arrayContaining([
        { volume: `kvm2-${renamed}.qcow2`, reason: `in use by domain '${renamed}.old'` },
        { volume: `kvm2-${lent}-seed.iso`, reason: `in use by domain '${borrower}'` },
      ]),
    );
    const left = await poolVolumes(pool);
    expect(left).toContain(`kvm2-${renamed}.qcow2`);
    expect(left).toContain(`kvm2-${lent}-seed.iso`);
    expect(left).not.toContain(`kvm2-${lone}.qcow2`);
    expect(
      logLines.some(
        (l) => l['level'] === 40 && l['volume'] === `kvm2-${renamed}.qcow2` && l['host'] === 'h1',
      ),
    ).toBe(true);
  });

  it('keeps a volume a domain attached while the sweep removed an earlier candidate', async () => {
    const first = `${u}-a1`; // nobody's: deleted, the host's domains listed under its lock
    const later = `${u}-z1`; // attached by a foreign domain while the sweep waits for its lock
    const borrower = `${u}-z1b`;
    const laterVolume = `kvm2-${later}.qcow2`;
    await makeVolume(`kvm2-${first}.qcow2`);
    await makeVolume(laterVolume);
    const key = `instance:h1/${later}`;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held = locks.withLock(key, () => gate);
    let attached = false;
    locks.onRequest = (k) => {
      if (k !== key) return;
      const disk =
        `<disk type='volume' device='disk'><source pool='${pool}' volume='${laterVolume}'/>` +
        `<target dev='vda' bus='virtio'/></disk>`;
      void defineForeignDomain(borrower, disk)
        .then(() => (attached = true))
        .finally(() => release());
    };
    try {
      const report = await provider.sweepOrphanVolumes('h1', { olderThanMs: 0 });
      expect(attached).toBe(true);
      expect(report.removed).toContain(`kvm2-${first}.qcow2`);
      expect(report.removed).not.toContain(laterVolume);
      expect(report.skipped).toContainEqual({
        volume: laterVolume,
        reason: `in use by domain '${borrower}'`,
      });
    } finally {
      locks.onRequest = undefined;
      release();
      await held;
    }
    expect(await poolVolumes(pool)).toContain(laterVolume);
  });

  it('rejects when the host cannot be reached', async () => {
    const closed = await freePort();
    const uri = sshd.uri('/system').replace(`:${sshd.port}/`, `:${closed}/`);
    const down = new Provider(
      parseConfig({ hosts: [testHost(sshd, 'kvm2-sweep-unused', { uri, pool })], images: {} }),
    );
    try {
      await expect(down.sweepOrphanVolumes('h1', { olderThanMs: 0 })).rejects.toMatchObject({
        kind: 'transient',
      });
    } finally {
      await down.close();
    }
  });

  it('rejects, permanent, when the pool does not exist', async () => {
    const missing = uniqueName('kvm2-sweep-nopool');
    const other = new Provider(
      parseConfig({
        hosts: [testHost(sshd, 'kvm2-sweep-unused', { pool: missing })],
        images: {},
      }),
    );
    try {
      await expect(other.sweepOrphanVolumes('h1', { olderThanMs: 0 })).rejects.toMatchObject({
        code: 'ERR_HOST_OBJECT_MISSING',
        kind: 'permanent',
      });
    } finally {
      await other.close();
    }
  });
});
