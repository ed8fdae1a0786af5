// Worker processes (issue #5) when the host's sshd goes away: sshd stopped and restarted (the
// create is retried, transient, and succeeds once it is back), and a key sshd does not accept
// (failed after one attempt, permanent). Real `kvm2 worker` processes, real Redis, the real
// libvirtd through sshd.
import type { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { stopSshdListener, waitUntil } from '../harness/fault-kit.js';
import { faultHooks, faultRig } from '../harness/fault-rig.js';
import type { QueueFleet } from '../harness/queue-fleet.js';
import { testHost } from '../harness/test-host.js';

const rig = faultRig();
const { create, instanceName, outcomes, show, startWorker, writeConfig } = rig;
let fleet: QueueFleet;
let client: Kvm2Client;
/** The queue host.h1, to read jobs' state, progress and attempts. */
let queue: Queue;

faultHooks(rig, (setup) => ({ fleet, client, queue } = setup));

describe('sshd stopped, then restarted', () => {
  it('the create is retried (transient) and succeeds once sshd is back', async () => {
    await startWorker(writeConfig());
    const name = instanceName('sshd');
    let restarted = false;
    try {
      await stopSshdListener(fleet.sshd);
      const stoppedAt = Date.now();
      const job = await create(name, fleet.image);
      await waitUntil(
        async () => (await outcomes(job.jobId)).some((r) => r.outcome === 'retrying'),
        60_000,
        `a retrying result for job ${job.jobId}`,
      );
      show('sshd down → first retrying result', Date.now() - stoppedAt);
      await fleet.sshd.restart();
      restarted = true;
      const restartedAt = Date.now();

      const result = await client.waitFor(job.jobId, { timeoutMs: 120_000 });
      show('sshd restarted → succeeded', Date.now() - restartedAt);
      expect(result).toMatchObject({
        outcome: 'succeeded',
        op: 'create',
        instanceId: `h1/${name}`,
      });
      const all = await outcomes(job.jobId);
      const retries = all.slice(0, -1);
      expect(retries.length).toBeGreaterThanOrEqual(1);
      for (const r of retries) {
        expect(r).toMatchObject({
          outcome: 'retrying',
          errorKind: 'transient',
          errorCode: 'ERR_LIBVIRT_DIAL',
        });
      }
      expect(all.map((r) => r.attempt)).toEqual(all.map((_, i) => i + 1));
      expect(result.attempt).toBeLessThanOrEqual(5);
      process.stdout.write(
        `[worker-faults] sshd: ${retries.length} retrying result(s), first: ${retries[0]?.errorCode ?? ''} ${retries[0]?.message ?? ''}\n`,
      );
      expect(await fleet.domains()).toEqual([name]);
    } finally {
      if (!restarted) await fleet.sshd.restart();
    }
  }, 180_000);
});

describe('a key sshd does not accept', () => {
  it('fails after one attempt with errorKind permanent', async () => {
    const stranger = await fleet.sshd.makeKey('stranger');
    const host = testHost(fleet.sshd, fleet.net.name, {
      concurrency: 2,
      uri: fleet.sshd.uri('/system', { keyfile: stranger.privatePath }),
    });
    await startWorker(writeConfig({}, { hosts: [host] }));
    const name = instanceName('key');
    const job = await create(name, fleet.image);

    const result = await client.waitFor(job.jobId, { timeoutMs: 60_000 });
    expect(result).toMatchObject({ outcome: 'failed', errorKind: 'permanent', attempt: 1 });
    process.stdout.write(
      `[worker-faults] wrong key: ${result.errorCode ?? ''} ${result.message ?? ''}\n`,
    );
    // The result is written just before BullMQ moves the job: failed, final, no retry coming.
    await waitUntil(
      async () => (await queue.getJobState(job.jobId)) === 'failed',
      10_000,
      `job ${job.jobId} to be failed`,
    );
    const failed = await queue.getJob(job.jobId);
    expect(failed?.attemptsMade).toBe(1);
    expect(await outcomes(job.jobId)).toHaveLength(1);
    expect(await fleet.domains()).toEqual([]);
  }, 120_000);
});
