// The host watcher (docs/events.md) under a burst of a domain's events and across a lost
// link: real libvirtd through the harness's sshd, virsh making the changes. While a look at the domain is held (its publish
// waits on Redis, say, or its reads on a slow daemon), every event heard for it was a look of
// its own, each with its reads, queued without bound: a guest that connects and disconnects
// its agent in a loop, or a daemon sending faster than looks finish, grew the worker's memory
// (776 MB for a million events) and the daemon's load with it. And a foreign domain whose name
// is no DNS label, undefined, was taken for a failed publish and resynced the host. And a
// recheck of an instance still without an address, scheduled before the link was lost, read
// it on the dead link: a failed read, an extra resync, and the backoff doubled.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { newUid } from '../../src/provider/core/ids.js';
import type { HostChange, HostWatch } from '../../src/provider/operations/watch-host.js';
import type { Provider } from '../../src/provider/provider.js';
import { KVM2_XMLNS } from '../../src/provider/xml/metadata.js';
import { removeEventDomain, uefiDomainXml } from '../harness/domain-events.js';
import { restartLibvirtd } from '../harness/libvirtd.js';
import { sleep, waitUntil } from '../harness/fault-kit.js';
import { providerHooks, providerRig } from '../harness/provider-rig.js';
import { uniqueName, virsh } from '../harness/virsh.js';

const rig = providerRig();
const { logLines } = rig;
let dir: string;
let provider: Provider;

providerHooks(rig, (setup) => ({ dir, provider } = setup));

/** Defines `name` with `metadata` in its <metadata>. */
async function defineWith(name: string, metadata: string): Promise<void> {
  const file = path.join(dir, `${name}.xml`);
  await writeFile(
    file,
    uefiDomainXml(name).replace('</domain>', `  <metadata>${metadata}</metadata>\n</domain>`),
  );
  await virsh(['define', file]);
}

const kvm2Metadata = (): string =>
  `<kvm2:instance xmlns:kvm2='${KVM2_XMLNS}' uid='${newUid()}' createdAt='2026-01-01T00:00:00.000Z' tag='burst' image='demo'/>`;

/** The watch's reads of `name`'s metadata so far (one per look at a kvm2 domain). */
const metadataReads = (): number =>
  logLines.filter((l) => l.msg === 'libvirt call' && l.procedure === 'DomainGetMetadata').length;

interface Rig {
  readonly watch: HostWatch;
  readonly changes: HostChange[];
  readonly errors: string[];
  /** Holds every publish from now until release(). */
  hold(): void;
  release(): void;
}

async function watching(recheckMs = 60_000): Promise<Rig & { resynced: () => number }> {
  const changes: HostChange[] = [];
  const errors: string[] = [];
  let gate: Promise<void> | undefined;
  let open = (): void => undefined;
  let resynced = 0;
  const watch = provider.watch({
    host: 'h1',
    publish: async (change) => {
      changes.push(change);
      await gate;
    },
    published: () => Promise.resolve([]),
    onError: (err, during) => void errors.push(`${during}: ${(err as Error).message}`),
    onResynced: () => void (resynced += 1),
    recheckMs,
    recheckForMs: recheckMs === 60_000 ? 0 : 60_000,
  });
  watch.start();
  await waitUntil(() => resynced > 0, 20_000, 'the first resync');
  return {
    watch,
    changes,
    errors,
    resynced: () => resynced,
    hold: () => {
      gate = new Promise((resolve) => (open = resolve));
    },
    release: () => {
      gate = undefined;
      open();
    },
  };
}

describe('a burst of one domain’s events', () => {
  it('while a look is held, the events after it make one look, not one each', async () => {
    const name = uniqueName('kvm2-burst').replace(/[^a-z0-9-]/g, '');
    await defineWith(name, kvm2Metadata());
    const w = await watching();
    try {
      await virsh(['start', name]);
      await waitUntil(() => w.changes.some((c) => c.name === name), 10_000, 'started published');
      // The next look's publish is held; twenty suspend and resume pairs are heard meanwhile.
      w.hold();
      await virsh(['suspend', name]);
      await waitUntil(
        () => w.changes.filter((c) => c.name === name).length >= 2,
        10_000,
        'the held publish',
      );
      const readsHeld = metadataReads();
      for (let i = 0; i < 20; i += 1) {
        await virsh(['resume', name]);
        await virsh(['suspend', name]);
      }
      await virsh(['resume', name]);
      await sleep(1_000); // the events are in
      w.release();
      await waitUntil(
        () => w.changes.filter((c) => c.name === name).at(-1)?.observation?.state !== 'paused',
        10_000,
        'the last change published',
      );
      await sleep(1_000);
      // 41 events while held: one look for the last lifecycle event (41 before).
      const looks = metadataReads() - readsHeld;
      expect(looks).toBeGreaterThanOrEqual(1);
      expect(looks).toBeLessThanOrEqual(2);
      const last = w.changes.filter((c) => c.name === name).at(-1);
      expect(last?.cause.event).toBe('resumed');
      expect(w.errors).toEqual([]);
    } finally {
      w.release();
      await w.watch.close();
      await removeEventDomain(name);
    }
  }, 90_000);

  it('a foreign domain whose name is no DNS label, undefined: no publish, no error, no resync', async () => {
    const odd = `${uniqueName('kvm2-odd')}.old`;
    await defineWith(odd, '');
    const w = await watching();
    try {
      await virsh(['undefine', '--nvram', odd]);
      await sleep(1_500);
      expect(w.changes.filter((c) => c.name === odd)).toEqual([]);
      expect(w.errors).toEqual([]);
    } finally {
      await w.watch.close();
      await removeEventDomain(odd);
    }
  }, 60_000);
});

describe('a lost link', () => {
  it('a recheck due while the link is down waits for the new one, not a read on the dead one', async () => {
    const name = uniqueName('kvm2-recheck').replace(/[^a-z0-9-]/g, '');
    await defineWith(name, kvm2Metadata());
    await virsh(['start', name]);
    // Running without an address: provisioning, looked at again every 200 ms.
    const w = await watching(200);
    try {
      await waitUntil(
        () => w.changes.some((c) => c.name === name && c.observation?.state === 'provisioning'),
        10_000,
        'provisioning published',
      );
      await restartLibvirtd();
      await waitUntil(() => w.resynced() >= 2, 30_000, 'the resync on the new link');
      await sleep(1_000);
      // A call on the link lost says "link is down"; one the loss cut short says interrupted.
      expect(w.errors.filter((e) => /link is down/.test(e))).toEqual([]);
    } finally {
      await w.watch.close();
      await removeEventDomain(name);
    }
  }, 90_000);
});
