// The results stream against the real Redis: what upstream applications read from it through
// their consumer groups, and what a producer's waitFor resolves with.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kvm2Client } from '../../queues/client.js';
import { Kvm2Error } from '../../src/errors/error.js';
import {
  ackResults,
  ensureResultsGroup,
  lastResultId,
  readResults,
  ResultWatcher,
} from '../../queues/result-readers.js';
import { appendResult, appendRunResult } from '../../queues/results.js';
import { allResults } from '../harness/results.js';
import { request, result } from '../harness/queue-requests.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
let client: Kvm2Client;

beforeAll(async () => {
  scope = await redisScope('queue-results');
  client = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
});

afterAll(async () => {
  await client.close();
  await scope.cleanup();
});

describe('results stream', () => {
  it('delivers each result once per consumer group, until acknowledged', async () => {
    await ensureResultsGroup(scope.redis, scope.prefix, 'app-a');
    await ensureResultsGroup(scope.redis, scope.prefix, 'app-b');
    await ensureResultsGroup(scope.redis, scope.prefix, 'app-a'); // exists: no error
    const jobId = randomUUID();
    await appendResult(scope.redis, scope.prefix, {
      ...result(jobId, 'succeeded'),
      state: 'running',
      address: '192.0.2.7',
      traceContext: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    });
    const read = (group: string) =>
      readResults(scope.redis, scope.prefix, { group, consumer: 'c1' });

    const a = await read('app-a');
    expect(a).toHaveLength(1);
    expect(a[0]).toMatchObject({
      jobId,
      op: 'create',
      outcome: 'succeeded',
      attempt: 1,
      instanceId: 'h1/x',
      state: 'running',
      address: '192.0.2.7',
      traceContext: { traceparent: expect.stringMatching(/^00-4bf9/) as string },
    });
    expect(await read('app-a')).toHaveLength(0);
    expect(await read('app-b')).toHaveLength(1);

    // Unacknowledged: redelivered to the consumer's pending read; acknowledged: gone.
    const pending = await readResults(scope.redis, scope.prefix, {
      group: 'app-a',
      consumer: 'c1',
      pending: true,
    });
    expect(pending.map((r) => r.jobId)).toEqual([jobId]);
    expect(await ackResults(scope.redis, scope.prefix, 'app-a', [a[0]?.streamId ?? ''])).toBe(1);
    expect(
      await readResults(scope.redis, scope.prefix, {
        group: 'app-a',
        consumer: 'c1',
        pending: true,
      }),
    ).toHaveLength(0);
  });

  it('waitFor resolves with a final result appended after it started', async () => {
    const { jobId } = await client.create(request('wait-1', 'h6'));
    const waiting = client.waitFor(jobId, { timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 100));
    await appendResult(scope.redis, scope.prefix, result(jobId, 'retrying'));
    await appendResult(scope.redis, scope.prefix, result(randomUUID(), 'succeeded'));
    await appendResult(scope.redis, scope.prefix, {
      ...result(jobId, 'succeeded'),
      attempt: 2,
    });
    const done = await waiting;
    expect(done).toMatchObject({ jobId, outcome: 'succeeded', attempt: 2 });
  });

  it('waitFor resolves with a final result appended before it started', async () => {
    const { jobId } = await client.create(request('wait-2', 'h6'));
    await appendResult(scope.redis, scope.prefix, result(jobId, 'superseded'));
    await expect(client.waitFor(jobId, { timeoutMs: 2_000 })).resolves.toMatchObject({
      outcome: 'superseded',
    });
    // A job this client did not enqueue: found by looking back through the stream.
    const other = randomUUID();
    await appendResult(scope.redis, scope.prefix, result(other, 'failed'));
    for (let i = 0; i < 600; i += 1) {
      await appendResult(scope.redis, scope.prefix, result(randomUUID(), 'retrying'));
    }
    await expect(client.waitFor(other, { timeoutMs: 2_000 })).resolves.toMatchObject({
      outcome: 'failed',
    });
  });

  it('waitFor times out, and stops when its signal aborts', async () => {
    const started = Date.now();
    const timedOut = await client
      .waitFor(randomUUID(), { timeoutMs: 300 })
      .catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(Kvm2Error);
    expect((timedOut as Kvm2Error).code).toBe('ERR_WAIT_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(1_500);

    const controller = new AbortController();
    const waiting = client.waitFor(randomUUID(), { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('caller left')), 200);
    await expect(waiting).rejects.toThrow('caller left');
  });
});

/** TCP sockets this process holds now. */
const tcpSockets = (): number =>
  process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;

describe('waits share one reader', () => {
  it('300 waits at once on one client hold one more connection, and each gets its own result', async () => {
    const waiter = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
    try {
      await waiter.waitFor(randomUUID(), { timeoutMs: 50 }).catch(() => undefined); // dialled
      const before = tcpSockets();
      const ids = Array.from({ length: 300 }, () => randomUUID());
      const waits = ids.map((id) => waiter.waitFor(id, { timeoutMs: 20_000 }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Each wait had a connection of its own before: 300 more sockets.
      expect(tcpSockets() - before).toBeLessThanOrEqual(1);
      for (const [i, id] of ids.entries())
        await appendResult(scope.redis, scope.prefix, result(id, i % 2 ? 'failed' : 'succeeded'));
      const got = await Promise.all(waits);
      expect(got.map((r) => r.jobId)).toEqual(ids);
      expect(got.map((r) => r.outcome)).toEqual(
        ids.map((_, i) => (i % 2 ? 'failed' : 'succeeded')),
      );
    } finally {
      await waiter.close();
    }
  });

  it('a wait begun after the reader passed its result finds it from its since', async () => {
    const watcher = new ResultWatcher(scope.redis, scope.prefix);
    try {
      const keepsReading = watcher.wait(randomUUID(), { timeoutMs: 20_000 }).catch(() => undefined);
      const since = await lastResultId(scope.redis, scope.prefix);
      const [late, marker] = [randomUUID(), randomUUID()];
      await appendResult(scope.redis, scope.prefix, result(late, 'superseded'));
      await appendResult(scope.redis, scope.prefix, result(marker, 'succeeded'));
      // The reader has handed out the marker, so it is past the late job's result too.
      await watcher.wait(marker, { since, timeoutMs: 5_000 });
      await expect(watcher.wait(late, { since, timeoutMs: 2_000 })).resolves.toMatchObject({
        jobId: late,
        outcome: 'superseded',
      });
      // Without since: looked back for from the reader's position.
      await expect(watcher.wait(late, { timeoutMs: 2_000 })).resolves.toMatchObject({
        jobId: late,
      });
      expect(watcher.waiting).toBe(1);
      watcher.close();
      await keepsReading;
      expect(watcher.waiting).toBe(0);
    } finally {
      watcher.close();
    }
  });

  it('close ends the waits in progress with ERR_CLIENT_CLOSED and lets none start', async () => {
    const waiter = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
    const waits = [randomUUID(), randomUUID()].map((id) =>
      waiter.waitFor(id, { timeoutMs: 20_000 }).catch((e: unknown) => e),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    await waiter.close();
    for (const e of await Promise.all(waits)) {
      expect(e).toBeInstanceOf(Kvm2Error);
      expect((e as Kvm2Error).code).toBe('ERR_CLIENT_CLOSED');
    }
    await expect(waiter.waitFor(randomUUID())).rejects.toMatchObject({ code: 'ERR_CLIENT_CLOSED' });
  });
});

describe("a run's result", () => {
  it('is final once per attempt: a run repeated after its end was lost gets the first entry back', async () => {
    const jobId = randomUUID();
    const jobKey = `${scope.prefix}:host.h1:${jobId}`;
    await scope.redis.hset(jobKey, 'name', 'create'); // the job's BullMQ hash
    const lock = `${scope.prefix}:lock:test-${jobId}`;
    await scope.redis.set(lock, 'token');
    const retrying = await appendRunResult(
      scope.redis,
      scope.prefix,
      { ...result(jobId, 'retrying'), attempt: 1 },
      jobKey,
      { redisKey: lock, token: 'token' },
    );
    expect(await scope.redis.exists(lock)).toBe(0); // released in the same script
    const first = await appendRunResult(
      scope.redis,
      scope.prefix,
      { ...result(jobId, 'succeeded'), attempt: 2 },
      jobKey,
    );
    // The same attempt run again (a Redis failover rolled the job back): no second entry.
    const again = await appendRunResult(
      scope.redis,
      scope.prefix,
      { ...result(jobId, 'succeeded'), attempt: 2 },
      jobKey,
    );
    expect(again).toBe(first);
    // A later attempt (a failed job retried from the board) appends its own.
    const later = await appendRunResult(
      scope.redis,
      scope.prefix,
      { ...result(jobId, 'failed'), attempt: 3 },
      jobKey,
    );
    expect(later).not.toBe(first);
    const mine = (await allResults(scope.redis, scope.prefix)).filter((r) => r.jobId === jobId);
    expect(mine.map((r) => [r.outcome, r.attempt, r.streamId])).toEqual([
      ['retrying', 1, retrying],
      ['succeeded', 2, first],
      ['failed', 3, later],
    ]);
  });

  it('of a run whose job is no longer its own is left to the run that has it, the instance lock still released', async () => {
    // Worker A's run of the job's last attempt stalled away from it (cut off from Redis past
    // BullMQ's lock); worker B ran the attempt again and completed it, writing `succeeded`.
    // A's LockLostError would then add `failed`: two final results, the last one wrong.
    const jobId = randomUUID();
    const jobKey = `${scope.prefix}:host.h1:${jobId}`;
    await scope.redis.hset(jobKey, 'name', 'create');
    const instanceLock = `${scope.prefix}:lock:test-${jobId}`;
    await scope.redis.set(instanceLock, 'token-a');
    const failed = { ...result(jobId, 'failed'), attempt: 5 };
    const run = (jobToken: string): Promise<string> =>
      appendRunResult(
        scope.redis,
        scope.prefix,
        failed,
        jobKey,
        { redisKey: instanceLock, token: 'token-a' },
        jobToken,
      );
    // B holds the job now (its token in `<job>:lock`); then B has finished it (no lock at all).
    await scope.redis.set(`${jobKey}:lock`, 'bullmq-token-b');
    expect(await run('bullmq-token-a')).toBe('');
    expect(await scope.redis.exists(instanceLock)).toBe(0); // A's own lock still released
    await scope.redis.del(`${jobKey}:lock`);
    expect(await run('bullmq-token-a')).toBe('');
    expect((await allResults(scope.redis, scope.prefix)).filter((r) => r.jobId === jobId)).toEqual(
      [],
    );
    expect(await scope.redis.hget(jobKey, 'kvm2Final')).toBeNull();
    // While the job is A's, A's result is appended as before.
    await scope.redis.set(`${jobKey}:lock`, 'bullmq-token-a');
    const id = await run('bullmq-token-a');
    expect(id).not.toBe('');
    const mine = (await allResults(scope.redis, scope.prefix)).filter((r) => r.jobId === jobId);
    expect(mine.map((r) => [r.outcome, r.streamId])).toEqual([['failed', id]]);
  });
});
