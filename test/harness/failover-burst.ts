// A burst of creates through the client with a Redis failover in the middle (issue #15), for
// each highly available Redis the harness starts (Sentinel, Cluster): half the creates are
// enqueued, then the rest while the failover runs and the worker carries out the first half.
// A create refused while Redis changes hands (the client fails fast) is enqueued again with
// the same uid. Then: every request has its final result, each instance exists once on the
// host, no job is left active or waiting once the worker's stall check has run (a completion
// the failover refused), and the stream has a final result for every job.
import { isDeepStrictEqual } from 'node:util';
import { Queue } from 'bullmq';
import { expect } from 'vitest';
import type { EnqueuedCreate, Kvm2Client } from '../../queues/client.js';
import { hostQueueName } from '../../queues/names.js';
import type { RedisConnection } from '../../queues/redis.js';
import { FINAL_OUTCOMES } from '../../queues/results.js';
import type { QueueFleet } from './queue-fleet.js';
import { waitUntil } from './fault-kit.js';
import { allResults } from './results.js';

/** How long the queue may take to settle after the results: several of the fleet's stall checks. */
const SETTLE_MS = 20_000;

export interface FailoverBurst {
  readonly fleet: QueueFleet;
  readonly client: Kvm2Client;
  /** Instance names are `<label><i>`, the tag is `label`. */
  readonly label: string;
  readonly size: number;
  /** Where the fleet's keys are written now (`host:port`). */
  readonly master: () => Promise<string>;
  /** Fails Redis over; resolves with the new master of the fleet's keys. */
  readonly failover: () => Promise<string>;
  /** A connection of the test's own to read the queue and the stream afterwards. */
  readonly connect: () => Promise<RedisConnection>;
}

export async function burstAcrossFailover(burst: FailoverBurst): Promise<void> {
  const { fleet, client, label, size } = burst;
  const enqueue = async (name: string, uid: string): Promise<EnqueuedCreate> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        return await client.create(
          { host: 'h1', name, uid, image: fleet.image, tag: label, userData: '#cloud-config\n' },
          { wait: false },
        );
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (code !== 'ERR_REDIS_UNAVAILABLE' || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  };
  const names = Array.from({ length: size }, (_, i) => fleet.name(`${label}${i}`));
  const uids = names.map(() => crypto.randomUUID());
  const before = await burst.master();
  const half = Math.floor(size / 2);
  const first = await Promise.all(names.slice(0, half).map((n, i) => enqueue(n, uids[i] ?? '')));
  const [after, second] = await Promise.all([
    burst.failover(),
    Promise.all(names.slice(half).map((n, i) => enqueue(n, uids[half + i] ?? ''))),
  ]);
  expect(after).not.toBe(before);
  process.stdout.write(`[failover-burst ${label}] master ${before} → ${after}\n`);
  const jobs = [...first, ...second];

  const results = await Promise.all(
    jobs.map((j) => client.waitFor(j.jobId, { timeoutMs: 180_000 })),
  );
  // A failure's message and code are shown in the diff, so a failed run says what went wrong.
  expect(
    results.map((r) =>
      r.outcome === 'succeeded' ? r.outcome : `${r.outcome}: ${r.errorCode} ${r.message}`,
    ),
  ).toEqual(jobs.map(() => 'succeeded'));
  const mine = (await fleet.domains()).filter((d) => d.startsWith(fleet.name(label)));
  expect(mine.sort()).toEqual([...names].sort());

  const conn = await burst.connect();
  try {
    const queue = new Queue(hostQueueName('h1'), { connection: conn, prefix: fleet.scope.prefix });
    try {
      // A result can be read before its job leaves the active list: a completion the failover
      // refused (the job's lock was on the old master only) or lost (the result read from the
      // old master before it went) leaves the job active until it runs again, at once or at the
      // worker's stall check (stalledAfter, 3 s here), and that run ends the job (with the
      // recorded result where there is one: workers/runner.ts, finalOfAttempt). So the queue is
      // read until it settles.
      const settled = { active: 0, wait: 0, delayed: 0, prioritized: 0 };
      const read = () => queue.getJobCounts('active', 'wait', 'delayed', 'prioritized');
      const since = Date.now();
      const first = await read();
      let counts = first;
      // A timeout is reported by the assertion below, with the counts' diff.
      await waitUntil(
        async () => isDeepStrictEqual((counts = await read()), settled),
        SETTLE_MS,
        'the queue to settle',
        200,
      ).catch(() => undefined);
      if (!isDeepStrictEqual(first, settled)) {
        process.stdout.write(
          `[failover-burst ${label}] after the results ${JSON.stringify(first)}; ` +
            `${Date.now() - since} ms later ${JSON.stringify(counts)}\n`,
        );
      }
      expect(counts).toEqual(settled);
    } finally {
      await queue.close();
    }
    const stream = await allResults(conn, fleet.scope.prefix);
    for (const job of jobs) {
      const finals = stream.filter((r) => r.jobId === job.jobId && FINAL_OUTCOMES.has(r.outcome));
      expect(finals.length, job.jobId).toBeGreaterThanOrEqual(1);
    }
  } finally {
    conn.disconnect();
  }
}
