// Malformed payloads (issue #5): refused by the producer, naming the field, and forced into
// Redis by hand, where a real `kvm2 worker` process fails them permanently after one attempt.
// Real Redis, the real libvirtd through sshd.
import type { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { waitUntil } from '../harness/fault-kit.js';
import { faultHooks, faultRig, USER_DATA } from '../harness/fault-rig.js';
import type { QueueFleet } from '../harness/queue-fleet.js';

const rig = faultRig();
const { outcomes, startWorker, writeConfig } = rig;
let fleet: QueueFleet;
let client: Kvm2Client;
/** The queue host.h1, to read jobs' state, progress and attempts. */
let queue: Queue;

faultHooks(rig, (setup) => ({ fleet, client, queue } = setup));

describe('malformed payloads', () => {
  it('the producer refuses a bad name, naming the field; nothing is enqueued', async () => {
    const before = await queue.getJobCounts();
    const keysBefore = (await fleet.scope.keys()).length;
    await expect(
      client.create(
        { host: 'h1', name: 'Not_A_Name', image: fleet.image, tag: 'faults', userData: USER_DATA },
        { wait: false },
      ),
    ).rejects.toMatchObject({
      name: 'Kvm2Error',
      code: 'ERR_INVALID_JOB',
      kind: 'permanent',
      message: expect.stringContaining('job.create.name') as unknown,
    });
    expect(await queue.getJobCounts()).toEqual(before);
    expect((await fleet.scope.keys()).length).toBeLessThanOrEqual(keysBefore);
  });

  it('a payload forced into Redis by hand fails permanently in the worker after one attempt', async () => {
    const forced = await queue.add('create', { garbage: true }, { attempts: 3 });
    const jobId = forced.id ?? '';
    // A well-formed job of a fleet queue, put on a host queue.
    const misplaced = await queue.add('gc', { tag: 'ci', keep: [], graceMs: 0 }, { attempts: 3 });
    await startWorker(writeConfig());

    expect(await client.waitFor(misplaced.id ?? '', { timeoutMs: 60_000 })).toMatchObject({
      outcome: 'failed',
      op: 'gc',
      errorKind: 'permanent',
      errorCode: 'ERR_INVALID_JOB',
      attempt: 1,
      message: expect.stringContaining('do not belong on queue') as unknown,
    });

    const result = await client.waitFor(jobId, { timeoutMs: 60_000 });
    expect(result).toMatchObject({
      outcome: 'failed',
      op: 'create',
      errorKind: 'permanent',
      errorCode: 'ERR_INVALID_JOB',
      attempt: 1,
      message: expect.stringContaining('job.create.name') as unknown,
    });
    expect(await outcomes(jobId)).toHaveLength(1);
    await waitUntil(
      async () => (await queue.getJobState(jobId)) === 'failed',
      10_000,
      `job ${jobId} to be failed`,
    );
    const failed = await queue.getJob(jobId);
    expect(failed?.attemptsMade).toBe(1);
    expect(failed?.failedReason).toContain('job.create.name');
  }, 120_000);
});
