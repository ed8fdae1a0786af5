// kvm2's enqueue scripts add BullMQ jobs themselves (queues/lua/includes/add-bullmq-job.lua), so
// that a job and its generation are one atomic step. What they write must be what BullMQ's own
// Queue.add writes, key for key: this file adds the same job both ways, under two prefixes of
// the real Redis, and compares every key each leaves (job hash, wait list, marker, meta, event
// stream), on an open, a paused and a full queue; then a real BullMQ Worker runs a job kvm2
// added, with the options the client gave it. A BullMQ upgrade that changes its layout fails
// here first.
import { randomUUID } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteData, enqueueDelete } from '../../queues/enqueue.js';
import { DEFAULT_JOB_OPTIONS } from '../../queues/job-options.js';
import {
  hostQueueName,
  jobAddKeys,
  latestGenerationKey,
  requestCounterKey,
  resultsKey,
} from '../../queues/names.js';
import { LuaScript } from '../../queues/script.js';
import { REDIS_URL, redisScope, type RedisScope } from '../harness/redis.js';

let ours: RedisScope;
let theirs: RedisScope;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  ours = await redisScope('add-kvm2');
  theirs = await redisScope('add-bullmq');
});

afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await ours?.cleanup();
  await theirs?.cleanup();
});

function queueOf(scope: RedisScope, name: string): Queue {
  const queue = new Queue(name, { connection: scope.redis, prefix: scope.prefix });
  closers.push(() => queue.close());
  return queue;
}

type Snapshot = Record<string, unknown>;

/**
 * Every key under the queue's part of the prefix, by type, with the prefix and the job id
 * replaced by placeholders, and what varies by the instant (timestamps, stream ids) left out.
 */
async function snapshot(scope: RedisScope, queue: string, jobId: string): Promise<Snapshot> {
  const base = `${scope.prefix}:${queue}:`;
  const out: Snapshot = {};
  for (const key of (await scope.keys()).filter((k) => k.startsWith(base)).sort()) {
    const name = key.slice(base.length).replace(jobId, '<job>');
    const type = await scope.redis.type(key);
    if (type === 'hash') {
      const hash = await scope.redis.hgetall(key);
      if (name === '<job>') {
        const { timestamp, data = '{}', opts = '{}', ...rest } = hash;
        expect(Number(timestamp)).toBeGreaterThan(Date.now() - 60_000);
        out[name] = {
          ...rest,
          data: JSON.parse(data) as unknown,
          opts: JSON.parse(opts.replace(jobId, '<job>')) as unknown,
        };
      } else {
        // Queue's constructor writes its version into meta; an add does not.
        const { version: _v, ...rest } = hash;
        out[name] = rest;
      }
    } else if (type === 'list') {
      out[name] = (await scope.redis.lrange(key, 0, -1)).map((v) => v.replace(jobId, '<job>'));
    } else if (type === 'zset') {
      out[name] = await scope.redis.zrange(key, 0, -1, 'WITHSCORES');
    } else if (type === 'stream') {
      const entries = await scope.redis.xrange(key, '-', '+');
      out[name] = entries.map(([, fields]) => fields.map((f) => f.replace(jobId, '<job>')));
    } else {
      out[name] = `${type}: ${String(await scope.redis.get(key))}`;
    }
  }
  return out;
}

/** The same delete added by kvm2's script (`ours`) and by Queue.add (`theirs`). */
async function addBothWays(
  host: string,
  prepare: (scope: RedisScope, queue: string) => Promise<void> = () => Promise.resolve(),
): Promise<{ ours: Snapshot; theirs: Snapshot }> {
  const queue = hostQueueName(host);
  await prepare(ours, queue);
  await prepare(theirs, queue);
  const data = deleteData(`${host}/same`);
  const added = await enqueueDelete(ours.redis, ours.prefix, data);
  if (added === undefined) throw new Error('the delete was not enqueued');
  const jobId = randomUUID();
  await queueOf(theirs, queue).add(
    'delete',
    { ...data, generation: added.generation },
    { ...DEFAULT_JOB_OPTIONS.delete, jobId },
  );
  const mine = await snapshot(ours, queue, added.jobId);
  // kvm2's one addition to the job's hash: its begin, for the completion that fetches it
  // (complete-job.lua), naming the instance's keys and the job's generation.
  const { kvm2Begin, ...job } = mine['<job>'] as Record<string, unknown>;
  expect(JSON.parse(String(kvm2Begin))).toEqual({
    latest: latestGenerationKey(ours.prefix, `${host}/same`),
    lock: `${ours.prefix}:lock:instance:${host}/same`,
    reservation: '',
    generation: added.generation,
  });
  return {
    ours: { ...mine, '<job>': job },
    theirs: await snapshot(theirs, queue, jobId),
  };
}

describe("kvm2's job add against BullMQ's Queue.add", () => {
  it('writes the same keys, fields and events on an open queue', async () => {
    const both = await addBothWays('open');
    expect(both.ours).toEqual(both.theirs);
    // What the comparison covered: a job hash, the wait list, the marker, meta and events.
    expect(Object.keys(both.ours).sort()).toEqual(
      ['<job>', 'events', 'id', 'marker', 'meta', 'wait'].sort(),
    );
    expect(both.ours['marker']).toEqual(['0', '0']);
  });

  it('leaves no marker on a paused queue, as BullMQ does', async () => {
    const both = await addBothWays('paused', (scope, queue) => queueOf(scope, queue).pause());
    expect(both.ours).toEqual(both.theirs);
    expect(both.ours['marker']).toBeUndefined();
    expect(both.ours['wait']).toEqual(['<job>']);
  });

  it('leaves no marker on a queue at its global concurrency, as BullMQ does', async () => {
    const both = await addBothWays('full', async (scope, queue) => {
      await queueOf(scope, queue).setGlobalConcurrency(1);
      // One job in active: the queue is at its limit.
      await scope.redis.lpush(`${scope.prefix}:${queue}:active`, 'running');
    });
    expect(both.ours).toEqual(both.theirs);
    expect(both.ours['marker']).toBeUndefined();
  });

  it('a BullMQ worker blocked on the queue runs the job at once, with its options', async () => {
    const queue = hostQueueName('worked');
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    closers.push(() => Promise.resolve(connection.disconnect()));
    const ran = new Promise<Job>((resolve) => {
      const worker = new Worker(queue, (job) => Promise.resolve(resolve(job)), {
        connection,
        prefix: ours.prefix,
      });
      closers.push(() => worker.close());
    });
    // Added while the worker waits on its marker: the add has to wake it.
    await new Promise((r) => setTimeout(r, 300));
    const added = await enqueueDelete(ours.redis, ours.prefix, deleteData('worked/job'));
    const job = await ran;
    expect(job.id).toBe(added?.jobId);
    expect(job.name).toBe('delete');
    expect(job.data).toEqual({ id: 'worked/job', generation: added?.generation });
    expect(job.opts).toMatchObject({ ...DEFAULT_JOB_OPTIONS.delete, jobId: added?.jobId });
    expect(job.attemptsMade).toBe(0);
  });

  it('refuses a job id that exists, and writes nothing', async () => {
    const queue = hostQueueName('taken');
    const added = await enqueueDelete(ours.redis, ours.prefix, deleteData('taken/one'));
    const before = await snapshot(ours, queue, added?.jobId ?? '');
    const err = await LuaScript.load('enqueue-gc')
      .run(
        ours.redis,
        [
          ...jobAddKeys(ours.prefix, queue, added?.jobId ?? ''),
          resultsKey(ours.prefix),
          requestCounterKey(ours.prefix),
        ],
        [added?.jobId ?? '', '{"requestsBefore":', '{}', Date.now()],
      )
      .catch((e: unknown) => e);
    expect(String(err)).toMatch(/job id .* exists in its queue/);
    expect(await snapshot(ours, queue, added?.jobId ?? '')).toEqual(before);
  });
});
