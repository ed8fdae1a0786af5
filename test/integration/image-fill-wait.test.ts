// Creates that wait for another create's image fill (docs/security.md, item 8): a real worker
// process, the real libvirtd through sshd, an image server whose body stalls until the test
// lets it go. The waiting create must meet the fill lock before it asks the image server
// anything, and come back less and less often while the fill lasts.
import type { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { sleep, waitUntil } from '../harness/fault-kit.js';
import { faultHooks, faultRig } from '../harness/fault-rig.js';
import type { QueueFleet } from '../harness/queue-fleet.js';

const rig = faultRig();
let fleet: QueueFleet;
let client: Kvm2Client;
let queue: Queue;

faultHooks(rig, (setup) => ({ fleet, client, queue } = setup));

describe('a create waiting for another create to fill the image', () => {
  it('asks the image server nothing while it waits, then finishes from the cache', async () => {
    const image = await rig.newStall('fillwait');
    await rig.startWorker(rig.writeConfig());
    const path = new URL(image.config.url).pathname;

    const filler = await rig.create(rig.instanceName('filler'), image.name);
    await rig.insideDownload(image, filler.jobId);
    const probed = { ...fleet.images.stats(path) };
    const waiter = await rig.create(rig.instanceName('waiter'), image.name);

    // The waiter runs, meets the busy fill lock and is delayed, again and again.
    await waitUntil(
      async () => ((await queue.getJob(waiter.jobId))?.attemptsStarted ?? 0) >= 3,
      30_000,
      'the waiting create to have run three times',
    );
    await sleep(3_000);
    const during = { ...fleet.images.stats(path) };
    // Each run of the waiter used to send a HEAD (the pool-space precheck) before the lock.
    expect(during.heads).toBe(probed.heads);
    expect(during.gets).toBe(probed.gets);
    const waiterJob = await queue.getJob(waiter.jobId);
    expect(waiterJob?.attemptsMade).toBe(0); // busy delays spend no attempt
    expect(['delayed', 'active', 'waiting']).toContain(await queue.getJobState(waiter.jobId));

    image.release();
    const [a, b] = await Promise.all([
      client.waitFor(filler.jobId, { timeoutMs: 90_000 }),
      client.waitFor(waiter.jobId, { timeoutMs: 90_000 }),
    ]);
    expect(a).toMatchObject({ outcome: 'succeeded' });
    expect(b).toMatchObject({ outcome: 'succeeded' });
    // One download for both: the waiter found the base the filler made.
    expect(fleet.images.stats(path).gets).toBe(probed.gets);
    expect(fleet.images.stats(path).completed).toBe(1);
  }, 150_000);
});
