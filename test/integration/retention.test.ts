// Finished jobs are kept for a bounded age (SPEC §8, queues/job-options.ts), against the real
// Redis and BullMQ's own worker: BullMQ removes a queue's jobs past their age only as another
// job of that queue finishes, so on a queue that went quiet they stayed for good. The worker's
// sweep (workers/run/retention.ts) removes them, and only them.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RETENTION } from '../../queues/job-options.js';
import { sweepRetention } from '../../workers/run/retention.js';
import { waitUntil } from '../harness/fault-kit.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
let queue: Queue;

beforeAll(async () => {
  scope = await redisScope('retention');
  queue = new Queue('host.quiet', { connection: scope.redis, prefix: scope.prefix });
});

afterAll(async () => {
  await queue.close();
  await scope.cleanup();
});

const DAY_MS = 24 * 3600_000;

/** Runs `ok` jobs that complete and `bad` that fail, with kvm2's retention, on BullMQ's worker. */
async function finish(ok: number, bad: number): Promise<{ done: string[]; failed: string[] }> {
  const jobs = await queue.addBulk([
    ...Array.from({ length: ok }, () => ({ name: 'get', data: { ok: true }, opts: RETENTION })),
    ...Array.from({ length: bad }, () => ({ name: 'get', data: { ok: false }, opts: RETENTION })),
  ]);
  const connection = new Redis(scope.url, { maxRetriesPerRequest: null });
  const worker = new Worker(
    queue.name,
    (job) =>
      (job.data as { ok: boolean }).ok
        ? Promise.resolve('ok')
        : Promise.reject(new Error('refused')),
    { connection, prefix: scope.prefix },
  );
  await waitUntil(
    async () => {
      const counts = await queue.getJobCounts('completed', 'failed');
      return (counts['completed'] ?? 0) + (counts['failed'] ?? 0) >= ok + bad;
    },
    20_000,
    'the jobs finished',
  );
  await worker.close();
  connection.disconnect();
  const ids = jobs.map((j) => j.id ?? '');
  return { done: ids.slice(0, ok), failed: ids.slice(ok) };
}

/** Makes `ids` look finished `ageMs` ago: the set's score and the job's finishedOn. */
async function age(set: 'completed' | 'failed', ids: string[], ageMs: number): Promise<void> {
  const at = Date.now() - ageMs;
  for (const id of ids) {
    await scope.redis.zadd(`${scope.prefix}:${queue.name}:${set}`, at, id);
    await scope.redis.hset(`${scope.prefix}:${queue.name}:${id}`, 'finishedOn', at);
  }
}

const kept = async (id: string): Promise<boolean> =>
  (await scope.redis.exists(`${scope.prefix}:${queue.name}:${id}`)) === 1;

describe('finished jobs past their age on a quiet queue', () => {
  it('stay without the sweep, and the sweep removes them and nothing younger', async () => {
    const { done, failed } = await finish(4, 4);
    // Two of each past their age (completed: 24 h, failed: 7 days), two just under it.
    await age('completed', done.slice(0, 2), 2 * DAY_MS);
    await age('completed', done.slice(2), 23 * 3600_000);
    await age('failed', failed.slice(0, 2), 8 * DAY_MS);
    await age('failed', failed.slice(2), 6 * DAY_MS);

    // BullMQ's own retention: nothing finishes on the queue, nothing is removed.
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const id of [...done, ...failed]) expect(await kept(id), id).toBe(true);

    expect(await sweepRetention([queue])).toBe(4);
    for (const id of [...done.slice(0, 2), ...failed.slice(0, 2)]) {
      expect(await kept(id), id).toBe(false);
    }
    for (const id of [...done.slice(2), ...failed.slice(2)]) expect(await kept(id), id).toBe(true);
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 2, failed: 2 });
    // A second sweep finds nothing more.
    expect(await sweepRetention([queue])).toBe(0);
  }, 60_000);
});
