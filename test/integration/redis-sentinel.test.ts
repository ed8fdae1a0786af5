// kvm2 on Redis Sentinel (issue #15, first slice): a real Sentinel group on loopback (a master,
// a replica, three sentinels), a real `kvm2 worker` and the client library configured with
// `redis.sentinel`, the real libvirtd through sshd. A burst of creates with a SENTINEL FAILOVER
// in the middle: every request gets its final result, each instance exists once, no job stays
// active, and the results stream (on the new master) has every result.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnqueuedCreate, Kvm2Client } from '../../queues/client.js';
import { hostQueueName } from '../../queues/names.js';
import { FINAL_OUTCOMES } from '../../queues/results.js';
import { startQueueFleet, type QueueFleet } from '../harness/queue-fleet.js';
import { startSentinelGroup, type SentinelGroup } from '../harness/redis-sentinel.js';
import { allResults } from '../harness/results.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

const BURST = 8;

let group: SentinelGroup;
let fleet: QueueFleet;
let worker: WorkerProcess | undefined;
let client: Kvm2Client;
let overrides: Record<string, unknown> = {};

beforeAll(async () => {
  group = await startSentinelGroup();
  fleet = await startQueueFleet('sn');
  overrides = { redis: { sentinel: group.config, prefix: fleet.scope.prefix } };
  worker = await startWorkerProcess(fleet.writeConfig(overrides));
  client = fleet.client(overrides);
}, 120_000);

afterAll(async () => {
  await client?.close();
  await worker?.stop();
  await fleet?.cleanup();
  await group?.stop();
}, 120_000);

/** Enqueues, again with the same uid while Redis is failing over (the client fails fast). */
async function enqueue(name: string, uid: string): Promise<EnqueuedCreate> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await client.create(
        { host: 'h1', name, uid, image: fleet.image, tag: 'sn', userData: '#cloud-config\n' },
        { wait: false },
      );
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code !== 'ERR_REDIS_UNAVAILABLE' || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

describe('on Redis Sentinel', () => {
  it('a burst of creates across a SENTINEL FAILOVER: every result, each instance once, nothing left active', async () => {
    const names = Array.from({ length: BURST }, (_, i) => fleet.name(`sn${i}`));
    const uids = names.map(() => crypto.randomUUID());
    const before = await group.master();
    const half = BURST / 2;
    const first = await Promise.all(names.slice(0, half).map((n, i) => enqueue(n, uids[i] ?? '')));
    // The failover runs while the second half is enqueued and the worker carries out the first.
    const [after, second] = await Promise.all([
      group.failover(),
      Promise.all(names.slice(half).map((n, i) => enqueue(n, uids[half + i] ?? ''))),
    ]);
    expect(after).not.toBe(before);
    process.stdout.write(`[redis-sentinel] failover: master ${before} → ${after}\n`);
    const jobs = [...first, ...second];

    const results = await Promise.all(
      jobs.map((j) => client.waitFor(j.jobId, { timeoutMs: 180_000 })),
    );
    expect(results.map((r) => r.outcome)).toEqual(jobs.map(() => 'succeeded'));
    // Each instance once on the host.
    expect((await fleet.domains()).sort()).toEqual([...names].sort());

    let master: Redis | undefined;
    try {
      master = await group.connectMaster();
      const queue = new Queue(hostQueueName('h1'), {
        connection: master,
        prefix: fleet.scope.prefix,
      });
      try {
        const counts = await queue.getJobCounts('active', 'wait', 'delayed', 'prioritized');
        expect(counts).toEqual({ active: 0, wait: 0, delayed: 0, prioritized: 0 });
      } finally {
        await queue.close();
      }
      // The stream on the new master has a final result for every job.
      const stream = await allResults(master, fleet.scope.prefix);
      for (const job of jobs) {
        const finals = stream.filter((r) => r.jobId === job.jobId && FINAL_OUTCOMES.has(r.outcome));
        expect(finals.length, job.jobId).toBeGreaterThanOrEqual(1);
      }
    } finally {
      master?.disconnect();
    }
  }, 300_000);
});
