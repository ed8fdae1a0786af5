// A run that completes its job writes its result and releases its instance lock in BullMQ's
// completion itself (workers/run/completion.ts: complete-job.lua followed by BullMQ's own
// moveToFinished). What the completion leaves of the job must be what BullMQ's own leaves, key
// for key: this file runs the same job to completion both ways, under two prefixes of the real
// Redis, with real BullMQ workers, and compares every key of the queue (job hash, completed set,
// events, active list, lock); then what kvm2 adds (the result, the lock's release, one final
// result per attempt) and what happens when BullMQ refuses the completion.
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteData, enqueueDelete } from '../../queues/enqueue.js';
import { hostQueueName, latestGenerationKey, lockKey, resultsKey } from '../../queues/names.js';
import { createWorkerConnection } from '../../queues/redis.js';
import { resultEnding, type JobResult } from '../../queues/results.js';
import { RedisLocks } from '../../workers/locks/redis-locks.js';
import { beginInstanceJob, releaseUnclaimedBegin } from '../../workers/run/admission.js';
import {
  claimBegun,
  completingBackend,
  endWithCompletion,
  type CompletionBegun,
} from '../../workers/run/completion.js';
import { REDIS_URL, redisScope, type RedisScope } from '../harness/redis.js';

let ours: RedisScope;
let theirs: RedisScope;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  ours = await redisScope('complete-kvm2');
  theirs = await redisScope('complete-bullmq');
});

afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await ours?.cleanup();
  await theirs?.cleanup();
});

const RETENTION = { removeOnComplete: { age: 3600, count: 1000 }, attempts: 3 } as const;

function connection(): Redis {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  closers.push(() => Promise.resolve(redis.disconnect()));
  return redis;
}

function resultOf(job: Job, fields: Partial<JobResult> = {}): JobResult {
  return {
    jobId: job.id ?? '',
    op: 'delete',
    outcome: 'succeeded',
    attempt: job.attemptsMade + 1,
    timestamp: 1_700_000_000_000,
    instanceId: 'h1/same',
    state: 'deleted',
    ...fields,
  };
}

type Run = (job: Job, scope: RedisScope) => Promise<unknown>;

/**
 * Adds one job under `scope` and runs it with a real worker: kvm2's completing backend when
 * `kvm2`, BullMQ's own otherwise. Resolves once the worker is closed again, with the job's id
 * and the errors the worker emitted.
 */
async function runOne(
  scope: RedisScope,
  queueName: string,
  kvm2: boolean,
  processor: Run,
): Promise<{ jobId: string; errors: string[] }> {
  const queue = new Queue(queueName, { connection: scope.redis, prefix: scope.prefix });
  closers.push(() => queue.close());
  const jobId = randomUUID();
  await queue.add('delete', { id: 'h1/same' }, { ...RETENTION, jobId });
  const errors: string[] = [];
  let settle: () => void = () => undefined;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const processorOf = (job: Job): Promise<unknown> => processor(job, scope);
  const opts = { connection: connection(), prefix: scope.prefix, autorun: false };
  const worker = kvm2
    ? new Worker(
        queueName,
        processorOf,
        opts,
        completingBackend(scope.redis, { lockTtlMs: 30_000, newToken: randomUUID }),
      )
    : new Worker(queueName, processorOf, opts);
  worker.on('completed', () => settle());
  worker.on('failed', () => settle());
  worker.on('error', (err) => {
    errors.push(err.message.replaceAll(jobId, '<job>'));
    settle();
  });
  void worker.run();
  await settled;
  await worker.close();
  return { jobId, errors };
}

type Snapshot = Record<string, unknown>;

const INSTANT_FIELDS = new Set(['timestamp', 'processedOn', 'finishedOn']);

/** Every key of the queue, the prefix and job id as placeholders, instants and ids left out. */
async function snapshot(scope: RedisScope, queue: string, jobId: string): Promise<Snapshot> {
  const base = `${scope.prefix}:${queue}:`;
  const out: Snapshot = {};
  for (const key of (await scope.keys()).filter((k) => k.startsWith(base)).sort()) {
    const name = key.slice(base.length).replace(jobId, '<job>');
    const type = await scope.redis.type(key);
    if (type === 'hash') {
      const hash = await scope.redis.hgetall(key);
      const kept = Object.entries(hash).filter(([field]) => !INSTANT_FIELDS.has(field));
      out[name] = Object.fromEntries(kept.map(([f, v]) => [f, v.replaceAll(jobId, '<job>')]));
    } else if (type === 'list') {
      out[name] = (await scope.redis.lrange(key, 0, -1)).map((v) => v.replace(jobId, '<job>'));
    } else if (type === 'zset') {
      out[name] = (await scope.redis.zrange(key, 0, -1)).map((v) => v.replace(jobId, '<job>'));
    } else if (type === 'stream') {
      const entries = await scope.redis.xrange(key, '-', '+');
      out[name] = entries.map(([, fields]) => fields.map((f) => f.replace(jobId, '<job>')));
    } else {
      out[name] = type; // the stalled-check key: its value is an instant
    }
  }
  return out;
}

async function resultsIn(scope: RedisScope): Promise<string[][]> {
  return (await scope.redis.xrange(resultsKey(scope.prefix), '-', '+')).map(([, f]) => f);
}

/** The processor of a kvm2 run: its result written by the completion, its lock released. */
function completing(lockName: string, fields: Partial<JobResult> = {}): Run {
  return async (job, scope) => {
    const result = resultOf(job, fields);
    const lock = { redisKey: `${scope.prefix}:${lockName}`, token: 'mine' };
    const jobKey = `${scope.prefix}:${job.queueName}:${job.id ?? ''}`;
    endWithCompletion(job, resultEnding(scope.prefix, result, jobKey, lock));
    return Promise.resolve(result);
  };
}

describe("kvm2's completion against BullMQ's own", () => {
  it('leaves the same keys, fields and events, and adds the result and the release', async () => {
    const queue = 'host.same';
    await ours.redis.set(`${ours.prefix}:lock:instance:h1/same`, 'mine');
    const kvm2 = await runOne(ours, queue, true, completing('lock:instance:h1/same'));
    const bullmq = await runOne(theirs, queue, false, (job) => Promise.resolve(resultOf(job)));
    expect(kvm2.errors).toEqual([]);
    expect(bullmq.errors).toEqual([]);

    const a = await snapshot(ours, queue, kvm2.jobId);
    const b = await snapshot(theirs, queue, bullmq.jobId);
    // The job's hash too: a completed job's final result needs no naming there (the script's
    // writes reach a replica together or not at all; a refused completion names it, below).
    expect(a).toEqual(b);
    // What the comparison covered: the job kept as completed, its events, no lock left.
    expect(Object.keys(b).sort()).toEqual(
      ['<job>', 'completed', 'events', 'id', 'marker', 'meta', 'stalled-check'].sort(),
    );
    expect(b['completed']).toEqual(['<job>']);
    expect((b['<job>'] as Record<string, string>)['returnvalue']).toContain(
      '"outcome":"succeeded"',
    );

    expect(await resultsIn(ours)).toEqual([
      [
        'jobId',
        kvm2.jobId,
        'op',
        'delete',
        'outcome',
        'succeeded',
        'attempt',
        '1',
        'timestamp',
        '1700000000000',
        'instanceId',
        'h1/same',
        'state',
        'deleted',
      ],
    ]);
    expect(await ours.redis.exists(`${ours.prefix}:lock:instance:h1/same`)).toBe(0);
  });

  it("keeps a lock that has passed to another holder (its token is not the run's)", async () => {
    const lockKey = `${ours.prefix}:lock:instance:h1/taken`;
    await ours.redis.set(lockKey, 'someone-else');
    const before = (await resultsIn(ours)).length;
    const run = await runOne(ours, 'host.taken', true, completing('lock:instance:h1/taken'));
    expect(run.errors).toEqual([]);
    expect(await ours.redis.get(lockKey)).toBe('someone-else');
    expect(await resultsIn(ours)).toHaveLength(before + 1);
    expect(await ours.redis.zscore(`${ours.prefix}:host.taken:completed`, run.jobId)).not.toBe(
      null,
    );
  });

  it('appends no second final result for an attempt that wrote one, and completes the job', async () => {
    const queue = 'host.again';
    let earlier = '';
    const run = await runOne(ours, queue, true, async (job, scope) => {
      // The attempt's first run wrote its final result, and its end was lost.
      const jobKey = `${scope.prefix}:${job.queueName}:${job.id ?? ''}`;
      earlier =
        (await scope.redis.xadd(resultsKey(scope.prefix), '*', 'jobId', job.id ?? '')) ?? '';
      await scope.redis.hset(jobKey, 'kvm2Final', `1 ${earlier}`);
      return completing('lock:none')(job, scope);
    });
    expect(run.errors).toEqual([]);
    const mine = (await ours.redis.xrange(resultsKey(ours.prefix), '-', '+')).filter(
      ([, f]) => f[1] === run.jobId,
    );
    expect(mine.map(([id]) => id)).toEqual([earlier]);
    expect(await ours.redis.zscore(`${ours.prefix}:${queue}:completed`, run.jobId)).not.toBe(null);
  });

  it("refuses as BullMQ does when the job's lock is another worker's; the result stands", async () => {
    const queue = 'host.lost';
    const steal: Run = async (job, scope) => {
      await scope.redis.set(`${scope.prefix}:${queue}:${job.id ?? ''}:lock`, 'another-worker');
    };
    const kvm2 = await runOne(ours, queue, true, async (job, scope) => {
      await steal(job, scope);
      return completing('lock:none')(job, scope);
    });
    const bullmq = await runOne(theirs, queue, false, async (job, scope) => {
      await steal(job, scope);
      return resultOf(job);
    });
    expect(bullmq.errors[0]).toMatch(/lock/i);
    expect(kvm2.errors[0]).toBe(bullmq.errors[0]);
    expect(await snapshot(ours, queue, kvm2.jobId)).toMatchObject({
      active: ['<job>'],
    });
    expect(await snapshot(theirs, queue, bullmq.jobId)).toMatchObject({ active: ['<job>'] });
    // kvm2's part ran first, as when it was a round trip of its own: the result is there, for
    // the run after the stall to end with.
    const mine = (await resultsIn(ours)).filter((f) => f[1] === kvm2.jobId);
    expect(mine).toHaveLength(1);
    expect(await ours.redis.hget(`${ours.prefix}:${queue}:${kvm2.jobId}`, 'kvm2Final')).toMatch(
      /^1 \d+-\d+$/,
    );
  });

  it('appends no second final result when the completion is sent again after its reply was lost', async () => {
    // The connection resets after Redis ran the completion and before its reply arrived:
    // ioredis sends the unanswered command again once it reconnects (as a worker's connection
    // is made, workerRedisOptions), and Redis runs it a second time. The job is completed by
    // then, so BullMQ refuses (its lock is gone): that run's result is the same attempt's
    // second, and goes.
    const queueName = 'host.resent';
    const cut = await replyCuttingProxy(new URL(REDIS_URL).port, 'returnvalue');
    closers.push(() => cut.close());
    const completion = createWorkerConnection(`redis://127.0.0.1:${cut.port}`);
    completion.on('error', () => undefined); // the reset, which ioredis reconnects from
    closers.push(() => Promise.resolve(completion.disconnect()));
    const queue = new Queue(queueName, { connection: ours.redis, prefix: ours.prefix });
    closers.push(() => queue.close());
    const jobId = randomUUID();
    await queue.add('delete', { id: 'h1/resent' }, { ...RETENTION, jobId });
    const errors: string[] = [];
    const worker = new Worker(
      queueName,
      (job: Job) => completing('lock:none')(job, ours),
      { connection: connection(), prefix: ours.prefix, autorun: false },
      completingBackend(completion, { lockTtlMs: 30_000, newToken: randomUUID }),
    );
    worker.on('error', (err) => errors.push(err.message));
    void worker.run();
    const completed = `${ours.prefix}:${queueName}:completed`;
    const deadline = Date.now() + 10_000;
    while ((await ours.redis.zscore(completed, jobId)) === null || errors.length === 0) {
      if (Date.now() > deadline) throw new Error(`not completed and refused: ${errors.join('; ')}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await worker.close();
    expect(cut.cuts).toBe(1);
    expect(errors[0]).toMatch(/lock/i);
    const mine = (await resultsIn(ours)).filter((f) => f[1] === jobId);
    expect(mine).toHaveLength(1);
    expect(await ours.redis.hget(`${ours.prefix}:${queueName}:${jobId}`, 'kvm2Final')).toBe(null);
  });

  it("completes through BullMQ's own script a run that left no ending", async () => {
    const queue = 'host.plain';
    const before = (await resultsIn(ours)).length;
    const run = await runOne(ours, queue, true, (job) => Promise.resolve(resultOf(job)));
    expect(run.errors).toEqual([]);
    expect(await ours.redis.zscore(`${ours.prefix}:${queue}:completed`, run.jobId)).not.toBe(null);
    expect(await resultsIn(ours)).toHaveLength(before);
  });
});

describe('the begin of the job a completion fetches', () => {
  const instanceLock = (scope: RedisScope, id: string): string =>
    lockKey(scope.prefix, `instance:${id}`);

  /**
   * Two deletes enqueued by kvm2 on one host's queue, run one at a time by a worker with kvm2's
   * completion: the first run's completion fetches the second job and begins it. `before` runs
   * once both are enqueued, before the worker starts; `second` runs
   * as the second job's processor (the lock it holds is released by its completion).
   */
  async function twoDeletes(
    host: string,
    before: (ids: { first: string; second: string }, jobIds: string[]) => Promise<void>,
    second: (job: Job, scope: RedisScope) => Promise<{ releases?: string }>,
  ): Promise<{ jobIds: string[]; errors: string[] }> {
    const queueName = hostQueueName(host);
    const ids = { first: `${host}/first`, second: `${host}/second` };
    const jobIds: string[] = [];
    for (const id of [ids.first, ids.second]) {
      const added = await enqueueDelete(ours.redis, ours.prefix, deleteData(id));
      jobIds.push(added?.jobId ?? '');
    }
    await before(ids, jobIds);
    const errors: string[] = [];
    let done = 0;
    let settle: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const worker = new Worker(
      queueName,
      async (job: Job) => {
        const held = job.id === jobIds[1] ? (await second(job, ours)).releases : undefined;
        const jobKey = `${ours.prefix}:${queueName}:${job.id ?? ''}`;
        const lock =
          held === undefined
            ? undefined
            : { redisKey: held.split(' ')[0] ?? '', token: held.split(' ')[1] ?? '' };
        endWithCompletion(job, resultEnding(ours.prefix, resultOf(job), jobKey, lock));
        return resultOf(job);
      },
      { connection: connection(), prefix: ours.prefix, autorun: false, concurrency: 1 },
      completingBackend(ours.redis, { lockTtlMs: 30_000, newToken: randomUUID }),
    );
    const ended = (): void => {
      done += 1;
      if (done === 2) settle();
    };
    worker.on('completed', ended);
    worker.on('failed', ended);
    worker.on('error', (err) => {
      errors.push(err.message);
      settle();
    });
    void worker.run();
    await settled;
    await worker.close();
    return { jobIds, errors };
  }

  it('commits the generation and takes the instance lock; the run adopts that lock', async () => {
    let claimed: CompletionBegun | undefined;
    let lockDuringRun: string | null = null;
    let latestDuringRun: string | null = null;
    const run = await twoDeletes(
      'begins',
      () => Promise.resolve(),
      async (job, scope) => {
        claimed = claimBegun(job.id);
        lockDuringRun = await scope.redis.get(instanceLock(scope, 'begins/second'));
        latestDuringRun = await scope.redis.get(latestGenerationKey(scope.prefix, 'begins/second'));
        return { releases: `${instanceLock(scope, 'begins/second')} ${claimed?.token ?? ''}` };
      },
    );
    expect(run.errors).toEqual([]);
    expect(claimed?.state).toBe('locked');
    expect(claimed?.token).toMatch(/^[0-9a-f-]{36}$/);
    expect(lockDuringRun).toBe(claimed?.token);
    expect(Number(latestDuringRun)).toBe(claimed?.latest);
    // Released by the second job's own completion, with its result.
    expect(await ours.redis.exists(instanceLock(ours, 'begins/second'))).toBe(0);
    const results = (await resultsIn(ours)).filter((f) => run.jobIds.includes(f[1] ?? ''));
    expect(results).toHaveLength(2);
  });

  it('finds the instance busy, and leaves the other holder its lock', async () => {
    let claimed: CompletionBegun | undefined;
    const run = await twoDeletes(
      'busy',
      async (ids) => {
        await ours.redis.set(instanceLock(ours, ids.second), 'other-holder');
      },
      (job) => {
        claimed = claimBegun(job.id);
        return Promise.resolve({});
      },
    );
    expect(run.errors).toEqual([]);
    expect(claimed?.state).toBe('busy');
    expect(await ours.redis.get(instanceLock(ours, 'busy/second'))).toBe('other-holder');
  });

  it('finds the job superseded by a newer generation, and takes no lock', async () => {
    let claimed: CompletionBegun | undefined;
    const run = await twoDeletes(
      'newer',
      async (ids) => {
        await ours.redis.set(latestGenerationKey(ours.prefix, ids.second), '1000');
      },
      (job) => {
        claimed = claimBegun(job.id);
        return Promise.resolve({});
      },
    );
    expect(run.errors).toEqual([]);
    expect(claimed).toMatchObject({ state: 'superseded', latest: 1000 });
    expect(await ours.redis.exists(instanceLock(ours, 'newer/second'))).toBe(0);
    // The older job's commit leaves the newer latest in place, its TTL refreshed.
    const latest = latestGenerationKey(ours.prefix, 'newer/second');
    expect(await ours.redis.get(latest)).toBe('1000');
    expect(await ours.redis.ttl(latest)).toBeGreaterThan(29 * 24 * 3600);
  });

  it.each([
    ['not JSON', 'not json'],
    ['no lock key', '{"latest":"x","generation":"1","reservation":""}'],
    ['no generation', '{"latest":"x","lock":"y","reservation":""}'],
  ])(
    'leaves a fetched job whose begin is malformed (%s) unbegun, for its run to begin',
    async (_what, malformed) => {
      // kvm2Begin is what kvm2's enqueue scripts write, but any producer can add a job: a begin
      // the completion cannot read must not fail the script after BullMQ's part has run.
      const host = `bad${malformed.length}`;
      let claimed: CompletionBegun | undefined;
      const run = await twoDeletes(
        host,
        async (_ids, jobIds) => {
          const jobKey = `${ours.prefix}:${hostQueueName(host)}:${jobIds[1] ?? ''}`;
          await ours.redis.hset(jobKey, 'kvm2Begin', malformed);
        },
        (job) => {
          claimed = claimBegun(job.id);
          return Promise.resolve({});
        },
      );
      expect(run.errors).toEqual([]);
      expect(claimed).toBeUndefined();
      expect(await ours.redis.exists(instanceLock(ours, `${host}/second`))).toBe(0);
      const completed = await ours.redis.zrange(
        `${ours.prefix}:${hostQueueName(host)}:completed`,
        0,
        -1,
      );
      expect(completed.sort()).toEqual([...run.jobIds].sort());
    },
  );

  it('leaves unbegun a fetched job that BullMQ fails unrun (it stalled out)', async () => {
    // BullMQ fails a job marked `defa` (stalled more than allowed) without running its
    // processor: a lock its begin took would be held, unreleased, until its TTL.
    const run = await twoDeletes(
      'stalledout',
      async (_ids, jobIds) => {
        const jobKey = `${ours.prefix}:${hostQueueName('stalledout')}:${jobIds[1] ?? ''}`;
        await ours.redis.hset(jobKey, 'defa', 'job stalled more than allowable limit');
      },
      () => Promise.reject(new Error('a job BullMQ fails unrun was run')),
    );
    expect(run.errors).toEqual([]);
    const failed = `${ours.prefix}:${hostQueueName('stalledout')}:failed`;
    expect(await ours.redis.zrange(failed, 0, -1)).toEqual([run.jobIds[1]]);
    expect(await ours.redis.exists(instanceLock(ours, 'stalledout/second'))).toBe(0);
    expect(claimBegun(run.jobIds[1])).toBeUndefined();
  });

  it('a run whose data asks for another begin undoes this one and begins its own', async () => {
    const locks = new RedisLocks({ client: ours.redis, prefix: ours.prefix, ttlMs: 30_000 });
    let lockBefore: string | null = null;
    const run = await twoDeletes(
      'other',
      () => Promise.resolve(),
      async (job, scope) => {
        lockBefore = await scope.redis.get(instanceLock(scope, 'other/second'));
        const begun = await beginInstanceJob(
          scope.redis,
          locks,
          { prefix: scope.prefix, instanceId: 'other/elsewhere', generation: 1 },
          new AbortController(),
          job.id,
        );
        expect(begun.state).toBe('locked');
        expect(await scope.redis.exists(instanceLock(scope, 'other/second'))).toBe(0);
        expect(await scope.redis.exists(instanceLock(scope, 'other/elsewhere'))).toBe(1);
        if (begun.state === 'locked') await begun.lease.release();
        return {};
      },
    );
    expect(run.errors).toEqual([]);
    expect(lockBefore).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a run that ends before its begin gives the lock back', async () => {
    let lockBefore: string | null = null;
    const run = await twoDeletes(
      'unused',
      () => Promise.resolve(),
      async (job, scope) => {
        lockBefore = await scope.redis.get(instanceLock(scope, 'unused/second'));
        await releaseUnclaimedBegin(scope.redis, job.id);
        return {};
      },
    );
    expect(run.errors).toEqual([]);
    expect(lockBefore).toMatch(/^[0-9a-f-]{36}$/);
    expect(await ours.redis.exists(instanceLock(ours, 'unused/second'))).toBe(0);
  });
});

/**
 * A loopback proxy to Redis that, once a client's request contains `marker`, drops the next
 * reply that is not an error (Redis ran the command) and resets that client's connection: a
 * reset in mid-reply, which the real Redis cannot be made to show on demand.
 */
async function replyCuttingProxy(
  redisPort: string,
  marker: string,
): Promise<{ port: number; readonly cuts: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let armed = false;
  let cuts = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: Number(redisPort) });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('data', (chunk: Buffer) => {
      if (cuts === 0 && chunk.includes(marker)) armed = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (armed && chunk[0] !== 0x2d /* - */) {
        armed = false;
        cuts += 1;
        client.resetAndDestroy();
        return;
      }
      client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get cuts() {
      return cuts;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
