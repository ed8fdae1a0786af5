// Worker processes (issue #5) whose job's run is cut short and taken up again: a worker
// SIGKILLed inside a create (another worker finishes it), an instance lock another holder takes
// (the job retries once the key is free), and a job whose workers keep dying (BullMQ gives up on
// it). Real `kvm2 worker` processes, real Redis, the real libvirtd through sshd. "In the middle"
// is made deterministic by images whose download stalls until the test says go.
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { sleep, waitUntil } from '../harness/fault-kit.js';
import { faultHooks, faultRig, runOf } from '../harness/fault-rig.js';
import type { QueueFleet } from '../harness/queue-fleet.js';
import type { WorkerProcess } from '../harness/worker-process.js';

const rig = faultRig();
const {
  create,
  expectOnlyInstanceVolumes,
  insideDownload,
  instanceName,
  newStall,
  outcomes,
  show,
  startWorker,
  writeConfig,
} = rig;
let fleet: QueueFleet;
let client: Kvm2Client;
let connection: Redis;
/** The queue host.h1, to read jobs' state, progress and attempts. */
let queue: Queue;

faultHooks(rig, (setup) => ({ fleet, client, connection, queue } = setup));

describe('a worker killed in the middle of a create', () => {
  it('SIGKILL inside the image download: another worker finishes the job; one domain, no leaked volume', async () => {
    const image = await newStall('slow-kill');
    const configPath = writeConfig();
    const a = await startWorker(configPath);
    const name = instanceName('kill');
    const job = await create(name, image.name);
    await insideDownload(image, job.jobId);
    expect(a.logs.some(runOf(job.jobId))).toBe(false); // its run has not ended

    a.kill('SIGKILL');
    const killedAt = Date.now();
    expect((await a.exited).signal).toBe('SIGKILL');
    image.release();
    const b = await startWorker(configPath);

    const result = await client.waitFor(job.jobId, { timeoutMs: 120_000 });
    show('SIGKILL → succeeded on worker B', Date.now() - killedAt);
    expect(result).toMatchObject({ outcome: 'succeeded', op: 'create', instanceId: `h1/${name}` });
    // A wrote no result (killed); B's run is the one that ended it.
    expect((await outcomes(job.jobId)).map((r) => r.outcome)).toEqual(['succeeded']);
    await b.waitForLog(runOf(job.jobId), 10_000); // (logged just after the result)
    await waitUntil(
      async () => (await queue.getJobState(job.jobId)) === 'completed',
      10_000,
      `job ${job.jobId} to be completed`,
    );
    const finished = await queue.getJob(job.jobId);
    expect(finished?.stalledCounter).toBe(1); // it came back through BullMQ's stall check

    // The base A had half-uploaded was removed as debris and filled whole by B.
    await expectOnlyInstanceVolumes(name, image);
  }, 180_000);
});

describe('a lost instance lock', () => {
  it('cancels the running job (retrying, transient); the retry waits for the key, then succeeds', async () => {
    const image = await newStall('lock-lost');
    await startWorker(writeConfig());
    const name = instanceName('lost');
    const job = await create(name, image.name);
    await insideDownload(image, job.jobId);

    // Another holder takes the key (as if ours had lapsed): the lease's next renewal (every
    // lockTtl/3 = 500 ms) finds a foreign token and cancels the job's work.
    const lockKey = `${fleet.scope.prefix}:lock:instance:h1/${name}`;
    expect(await connection.get(lockKey)).not.toBeNull();
    await connection.set(lockKey, 'another-holder', 'PX', 2_500);
    const stolenAt = Date.now();
    await waitUntil(
      async () => (await outcomes(job.jobId)).length > 0,
      30_000,
      `job ${job.jobId} to report the lost lock`,
    );
    show('lock taken → job cancelled (retrying result)', Date.now() - stolenAt);
    const [first] = await outcomes(job.jobId);
    expect(first).toMatchObject({
      outcome: 'retrying',
      errorKind: 'transient',
      errorCode: 'ERR_LOCK_LOST',
      attempt: 1,
    });
    expect(first?.message).toMatch(/lock on instance:h1\/.* lost/);
    image.release();

    // The retry finds the key busy until the other holder's TTL lapses, then does the work.
    const result = await client.waitFor(job.jobId, { timeoutMs: 120_000 });
    expect(result).toMatchObject({ outcome: 'succeeded', attempt: 2 });
    expect(Date.now() - stolenAt).toBeGreaterThanOrEqual(2_500);
    await expectOnlyInstanceVolumes(name, image);
  }, 180_000);
});

describe('a job whose workers keep dying', () => {
  it('fails once BullMQ gives up on it (4 stalls), with a failed result on the stream', async () => {
    const image = await newStall('stall-out');
    const configPath = writeConfig();
    const name = instanceName('stallout');
    // A marker no log line could carry by chance: what the workers' logs are searched for.
    const secret = `#cloud-config\n# kvm2-secret-${randomUUID()}\n`;
    const job = await create(name, image.name, secret);
    const runs: WorkerProcess[] = [];
    const path = `/${image.name}.qcow2`;
    // Kill each worker inside the download (every GET stalls until release, never given):
    // BullMQ allows 3 stalls (workers/runtime.ts MAX_STALLED); the 4th fails the job.
    for (let kill = 1; kill <= 4; kill++) {
      const w = await startWorker(configPath);
      runs.push(w);
      await waitUntil(
        () => Promise.resolve(fleet.images.stats(path).gets >= kill),
        60_000,
        `download ${kill} of job ${job.jobId} to start`,
      );
      await sleep(200); // inside the stalled body
      w.kill('SIGKILL');
      await w.exited;
    }
    const last = await startWorker(configPath);
    runs.push(last);
    const result = await client.waitFor(job.jobId, { timeoutMs: 90_000 });
    expect(result).toMatchObject({
      outcome: 'failed',
      errorKind: 'transient',
      errorCode: 'ERR_JOB_STALLED',
      instanceId: `h1/${name}`,
    });
    expect(await queue.getJobState(job.jobId)).toBe('failed');
    expect((await outcomes(job.jobId)).map((r) => r.outcome)).toEqual(['failed']);
    const marker = secret.split('\n')[1] ?? '';
    expect(runs.flatMap((w) => w.logs).length).toBeGreaterThan(0);
    for (const w of runs) {
      expect(JSON.stringify(w.logs)).not.toContain(marker);
      expect(w.stderr()).not.toContain(marker);
    }
    expect(JSON.stringify(result)).not.toContain(marker);
    image.release();
  }, 240_000);
});
