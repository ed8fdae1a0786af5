// The queue layer's producer side against the real Redis (no workers yet): what a create, a
// repeat, a delete and a malformed payload leave in the queues and the generations.
import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import {
  context,
  propagation,
  trace,
  TraceFlags,
  type TextMapPropagator,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { Queue } from 'bullmq';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kvm2Client } from '../../queues/client.js';
import { deleteData, enqueueDelete } from '../../queues/enqueue.js';
import { isSuperseded, latestGeneration, requestCount } from '../../queues/generations.js';
import { hostQueueName, jobKey, lastRequestKey, latestGenerationKey } from '../../queues/names.js';
import { Kvm2Error } from '../../src/errors/error.js';
import { appendResult } from '../../queues/results.js';
import { sleep, waitUntil } from '../harness/fault-kit.js';
import { request, result } from '../harness/queue-requests.js';
import { redisScope, type RedisScope } from '../harness/redis.js';
import { monitorRedis } from '../harness/redis-monitor.js';

let scope: RedisScope;
let client: Kvm2Client;
const queues: Queue[] = [];

/** A test-side view of a host queue (the client's own are private). */
function hostQueue(host: string): Queue {
  const queue = new Queue(hostQueueName(host), { connection: scope.redis, prefix: scope.prefix });
  queues.push(queue);
  return queue;
}

async function queuedCount(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

beforeAll(async () => {
  scope = await redisScope('queues');
  client = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
});

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  await client.close();
  await scope.cleanup();
});

describe('create and delete', () => {
  it('enqueues one create job on host.<name> with the validated data and a generation', async () => {
    const queue = hostQueue('h1');
    const before = await queuedCount(queue);
    const enqueued = await client.create(request('web-1'));
    expect(enqueued.id).toBe('h1/web-1');
    expect(enqueued.uid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-/);
    expect(enqueued.generation).toBe(1);
    expect(await queuedCount(queue)).toBe(before + 1);

    const job = await queue.getJob(enqueued.jobId);
    expect(job?.name).toBe('create');
    expect(job?.data).toEqual({
      ...request('web-1'),
      uid: enqueued.uid,
      generation: 1,
    });
    expect(job?.opts.attempts).toBe(5);
    expect(job?.opts.backoff).toMatchObject({ type: 'exponential' });
    expect(job?.opts.removeOnComplete).toMatchObject({ count: expect.any(Number) as number });
  });

  it('yields the same job for a repeat of the same create, without a new generation', async () => {
    const queue = hostQueue('h1');
    const uid = randomUUID();
    const first = await client.create({ ...request('web-2'), uid });
    const before = await queuedCount(queue);
    const again = await client.create({ ...request('web-2'), uid });
    expect(again).toEqual(first);
    expect(await queuedCount(queue)).toBe(before);
    expect(await latestGeneration(scope.redis, scope.prefix, 'h1/web-2')).toBe(first.generation);
    expect(await requestCount(scope.redis, scope.prefix)).toBe(first.generation);
  });

  it("a repeat's waitFor sees the result the first create's job already appended", async () => {
    const uid = randomUUID();
    const first = await client.create({ ...request('web-3'), uid });
    await appendResult(scope.redis, scope.prefix, {
      ...result(first.jobId, 'succeeded'),
      instanceId: 'h1/web-3',
    });
    // A producer restarted after the job ended repeats its create, then waits on it.
    const producer = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
    try {
      const again = await producer.create({ ...request('web-3'), uid });
      expect(again.jobId).toBe(first.jobId);
      const final = await producer.waitFor(again.jobId, { timeoutMs: 5_000 });
      expect(final).toMatchObject({ jobId: first.jobId, outcome: 'succeeded' });
    } finally {
      await producer.close();
    }
  });

  it("a repeat's waitFor ends with ERR_RESULT_GONE once the job and its result are no longer kept", async () => {
    // The uid's reservation lives 7 days; the finished job 24 hours, its result until the
    // stream's cap trims it. A repeat after both gets the job back and waited for ever.
    const uid = randomUUID();
    const first = await client.create({ ...request('web-4'), uid });
    await scope.redis.del(jobKey(scope.prefix, hostQueueName('h1'), first.jobId));
    const producer = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
    const knowing = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix, hosts: ['h1'] });
    try {
      const again = await producer.create({ ...request('web-4'), uid });
      expect(again.jobId).toBe(first.jobId);
      const gone = await producer
        .waitFor(again.jobId, { timeoutMs: 10_000 })
        .catch((e: unknown) => e);
      expect(gone).toMatchObject({ code: 'ERR_RESULT_GONE', kind: 'permanent' });
      expect((gone as Error).message).toContain(`job ${first.jobId} is no longer kept`);
      // A client that did not enqueue it looks in its hosts' queues.
      await expect(knowing.waitFor(first.jobId, { timeoutMs: 10_000 })).rejects.toMatchObject({
        code: 'ERR_RESULT_GONE',
      });
      // A job still kept is waited for: its result, appended later, ends the wait.
      const kept = await client.create(request('web-5'));
      const waiting = knowing.waitFor(kept.jobId, { timeoutMs: 10_000 });
      await sleep(300);
      await appendResult(scope.redis, scope.prefix, {
        ...result(kept.jobId, 'succeeded'),
        instanceId: 'h1/web-5',
      });
      await expect(waiting).resolves.toMatchObject({ jobId: kept.jobId, outcome: 'succeeded' });
      // A health job (its queue is no host's) still kept is waited for too, to the timeout.
      const healthQueue = new Queue('health', { connection: scope.redis, prefix: scope.prefix });
      queues.push(healthQueue);
      const health = await healthQueue.add('health', { host: 'h1' });
      await expect(knowing.waitFor(health.id ?? '', { timeoutMs: 1_000 })).rejects.toMatchObject({
        code: 'ERR_WAIT_TIMEOUT',
      });
    } finally {
      await producer.close();
      await knowing.close();
    }
  });

  it('allocates each generation above the latest, whatever set the latest', async () => {
    const first = await client.delete('h1/lapsed');
    const second = await client.delete('h1/lapsed');
    expect(second.generation).toBe(first.generation + 1);
    const latest = latestGenerationKey(scope.prefix, 'h1/lapsed');
    expect(await scope.redis.get(latest)).toBe(String(second.generation));
    expect(await scope.redis.ttl(latest)).toBeGreaterThan(29 * 24 * 3600);
    // A job run commits its generation too (a job a producer added some other way, jobs.md).
    await scope.redis.set(latest, String(second.generation + 5));
    const third = await client.delete('h1/lapsed');
    expect(third.generation).toBe(second.generation + 6);
    expect(await isSuperseded(scope.redis, scope.prefix, 'h1/lapsed', third.generation)).toBe(
      false,
    );
    const created = await client.create(request('lapsed'));
    expect(created.generation).toBe(third.generation + 1);
  });

  it('a request made after the generation keys lapsed still comes after a job that waited that long', async () => {
    // A create waits over 30 days (its host's queue paused through an outage): its instance's
    // generation keys expire under it. The delete made then must still win.
    const waited = await client.create(request('waited'));
    await client.delete('h1/elsewhere');
    await scope.redis.del(
      latestGenerationKey(scope.prefix, 'h1/waited'),
      lastRequestKey(scope.prefix, 'h1/waited'),
    );
    const deleted = await client.delete('h1/waited');
    expect(deleted.generation).toBeGreaterThan(waited.generation);
    expect(await isSuperseded(scope.redis, scope.prefix, 'h1/waited', waited.generation)).toBe(
      true,
    );
    // Every generation is at most the request counter: the next request comes after it.
    expect(await requestCount(scope.redis, scope.prefix)).toBe(deleted.generation);
  });

  it("GC's delete is enqueued only while no request for the instance was made since the GC began", async () => {
    const queue = hostQueue('h1');
    await client.create(request('gc-older'));
    const raced = await client.create(request('gc-race'));
    const began = await requestCount(scope.redis, scope.prefix);
    // While the GC lists the hosts, a create replaces one of the instances it will find old.
    const replaced = await client.create(request('gc-race'));
    expect(replaced.generation).toBe(raced.generation + 1);

    const counter = await scope.redis.get(latestGenerationKey(scope.prefix, 'h1/gc-race'));
    const before = await queuedCount(queue);
    const skipped = await enqueueDelete(scope.redis, scope.prefix, deleteData('h1/gc-race'), {
      unrequestedSince: began,
    });
    expect(skipped).toBeUndefined();
    expect(await queuedCount(queue)).toBe(before);
    expect(await scope.redis.get(latestGenerationKey(scope.prefix, 'h1/gc-race'))).toBe(counter);
    expect(await isSuperseded(scope.redis, scope.prefix, 'h1/gc-race', replaced.generation)).toBe(
      false,
    );

    // A request made before the GC began does not hold its delete back.
    const queued = await enqueueDelete(scope.redis, scope.prefix, deleteData('h1/gc-older'), {
      unrequestedSince: began,
    });
    expect(queued?.generation).toBeGreaterThan(replaced.generation);
    expect(await queuedCount(queue)).toBe(before + 1);
    // Nor does an instance kvm2 never saw a request for.
    const fresh = await enqueueDelete(scope.redis, scope.prefix, deleteData('h1/never'), {
      unrequestedSince: began,
    });
    expect(fresh?.generation).toBe(await requestCount(scope.redis, scope.prefix));
  });

  it('refuses a uid reused for a different request', async () => {
    const uid = randomUUID();
    await client.create({ ...request('web-3'), uid });
    const err = await client
      .create({ ...request('web-3'), uid, image: 'other' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Kvm2Error);
    expect((err as Kvm2Error).code).toBe('ERR_UID_REUSED');
  });

  it('places a zone request with resolveZone, and keeps the first placement on a repeat', async () => {
    const hosts = ['z-a', 'z-b'];
    let calls = 0;
    const zoned = new Kvm2Client({
      redisUrl: scope.url,
      prefix: scope.prefix,
      resolveZone: () => hosts[calls++ % 2] ?? 'z-a',
    });
    try {
      const { host: _h, ...rest } = request('zoned-1');
      const uid = randomUUID();
      const first = await zoned.create({ ...rest, zone: 'z1', uid });
      const again = await zoned.create({ ...rest, zone: 'z1', uid });
      expect(first.id).toBe('z-a/zoned-1');
      expect(again).toEqual(first);
      expect(await queuedCount(hostQueue('z-b'))).toBe(0);
      const err = await client.create({ ...rest, zone: 'z1' }).catch((e: unknown) => e);
      expect((err as Kvm2Error).code).toBe('ERR_ZONE_UNRESOLVED');
    } finally {
      await zoned.close();
    }
  });

  it('a repeat of a zone create finds its job though placement would now fail', async () => {
    let placements = 0;
    let zoneUp = true;
    const zoned = new Kvm2Client({
      redisUrl: scope.url,
      prefix: scope.prefix,
      resolveZone: () => {
        placements += 1;
        if (!zoneUp) throw new Kvm2Error('ERR_ZONE_UNAVAILABLE', "no host in zone 'z1'");
        return 'z-a';
      },
    });
    try {
      const { host: _h, ...rest } = request('zoned-2');
      const uid = randomUUID();
      const first = await zoned.create({ ...rest, zone: 'z1', uid });
      zoneUp = false; // the zone's hosts went unhealthy after the first enqueue
      expect(await zoned.create({ ...rest, zone: 'z1', uid })).toEqual(first);
      expect(placements).toBe(1);
      await expect(zoned.create({ ...rest, zone: 'z1' })).rejects.toMatchObject({
        code: 'ERR_ZONE_UNAVAILABLE',
      });
    } finally {
      await zoned.close();
    }
  });

  it('supersedes a create by a later delete of the same instance', async () => {
    const queue = hostQueue('h2');
    const created = await client.create(request('db-1', 'h2'));
    const deleted = await client.delete('h2/db-1');
    expect(deleted.generation).toBeGreaterThan(created.generation);
    expect(await isSuperseded(scope.redis, scope.prefix, 'h2/db-1', created.generation)).toBe(true);
    expect(await isSuperseded(scope.redis, scope.prefix, 'h2/db-1', deleted.generation)).toBe(
      false,
    );
    const job = await queue.getJob(deleted.jobId);
    expect(job?.name).toBe('delete');
    expect(job?.data).toEqual({ id: 'h2/db-1', generation: deleted.generation });
  });

  it('enqueues a create, a delete and a GC each in one Redis command', async () => {
    // Scripts loaded first (a script's first run ever is EVALSHA, NOSCRIPT, then EVAL).
    await client.create(request('warm-up', 'h3'));
    await client.delete('h3/warm-up');
    await client.gc({ tag: 'warm-up', keep: [], graceMs: 0 });
    // Every command sent (not run inside a script) that names this test's instance or the GC
    // queue, seen by MONITOR.
    const seen: string[][] = [];
    const monitor = await monitorRedis(({ args, source }) => {
      if (source.toLowerCase().includes('lua')) return;
      const ours = args.some((a) => a.startsWith(scope.prefix));
      if (ours && args.some((a) => a.includes('one-step') || a.includes(':gc:'))) seen.push(args);
    });
    try {
      const queue = hostQueue('h3');
      const created = await client.create(request('one-step', 'h3'));
      const deleted = await client.delete('h3/one-step');
      const gc = await client.gc({ tag: 'one-step', keep: [], graceMs: 0 });
      await waitUntil(() => seen.length >= 3, 5_000, 'the enqueues on MONITOR');
      await sleep(200);
      expect(seen.map((args) => args[0]?.toLowerCase())).toEqual(['evalsha', 'evalsha', 'evalsha']);
      // The generation is in the job, and the delete supersedes the create at once.
      expect((await queue.getJob(created.jobId))?.data).toMatchObject({
        generation: created.generation,
      });
      expect((await queue.getJob(deleted.jobId))?.data).toEqual({
        id: 'h3/one-step',
        generation: deleted.generation,
      });
      expect(await isSuperseded(scope.redis, scope.prefix, 'h3/one-step', created.generation)).toBe(
        true,
      );
      const gcJob = await new Queue('gc', { connection: scope.redis, prefix: scope.prefix }).getJob(
        gc.jobId,
      );
      expect(gcJob?.data).toMatchObject({
        tag: 'one-step',
        requestsBefore: await requestCount(scope.redis, scope.prefix),
      });
    } finally {
      monitor.stop();
    }
  });

  it('a new client given many calls at once: each waits for the first dial and is enqueued', async () => {
    const fresh = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
    try {
      const queued = await Promise.all(
        Array.from({ length: 20 }, (_, i) => fresh.delete(`hb/burst-${i}`)),
      );
      expect(new Set(queued.map((q) => q.jobId)).size).toBe(20);
      expect(await queuedCount(hostQueue('hb'))).toBe(20);
    } finally {
      await fresh.close();
    }
  });

  it('refuses a malformed payload naming the field, and enqueues nothing', async () => {
    const queue = hostQueue('h4');
    expect(await queuedCount(queue)).toBe(0);
    const keysBefore = (await scope.keys()).sort();
    const err = await client
      .create({ ...request('Bad_Name', 'h4'), userData: 'secret-password' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Kvm2Error);
    expect((err as Kvm2Error).code).toBe('ERR_INVALID_JOB');
    expect((err as Kvm2Error).message).toMatch(/^job\.create\.name: /);
    expect((err as Kvm2Error).message).not.toContain('secret-password');
    const del = await client.delete('not-an-id').catch((e: unknown) => e);
    expect((del as Kvm2Error).message).toMatch(/^job\.delete\.id: /);
    expect(await queuedCount(queue)).toBe(0);
    expect((await scope.keys()).sort()).toEqual(keysBefore);
  });

  it('a client that knows the hosts refuses a create or delete for any other, enqueuing nothing', async () => {
    // No worker consumes host.typo and the dashboard lists only configured queues: the job would
    // wait unseen for ever, and its generation keys linger.
    const configured = new Kvm2Client({
      redisUrl: scope.url,
      prefix: scope.prefix,
      hosts: ['h1', 'h2'],
    });
    try {
      const keysBefore = (await scope.keys()).sort();
      const create = await configured
        .create({ ...request('typo-1', 'typo'), userData: 'secret-password' })
        .catch((e: unknown) => e);
      expect(create).toMatchObject({ code: 'ERR_INVALID_JOB', kind: 'permanent' });
      expect((create as Error).message).toBe(
        "job.create.host: host 'typo' is not in the configuration (hosts: h1, h2)",
      );
      const del = await configured.delete('typo/typo-1').catch((e: unknown) => e);
      expect(del).toMatchObject({ code: 'ERR_INVALID_JOB' });
      expect((del as Error).message).toMatch(/^job\.delete\.id: host 'typo' is not in /);
      expect((await scope.keys()).sort()).toEqual(keysBefore);
      expect(await queuedCount(hostQueue('typo'))).toBe(0); // (its Queue writes a meta key)
      // A kept id on a host of no configuration keeps nothing: the instance meant (its host
      // mistyped) would be deleted by the round.
      const keysBeforeGc = (await scope.keys()).sort();
      const gc = await configured
        .gc({ tag: 'web', keep: ['h1/web-1', 'hl/web-2'], graceMs: 0 })
        .catch((e: unknown) => e);
      expect(gc).toMatchObject({ code: 'ERR_INVALID_JOB' });
      expect((gc as Error).message).toBe(
        "job.gc.keep.1: host 'hl' is not in the configuration (hosts: h1, h2)",
      );
      expect((await scope.keys()).sort()).toEqual(keysBeforeGc);
      // The configured hosts still take jobs.
      const taken = await configured.delete('h2/typo-1');
      expect(taken.generation).toBe(await requestCount(scope.redis, scope.prefix));
    } finally {
      await configured.close();
    }
  });

  it('refuses a gc whose keep is not an array, naming the field', async () => {
    for (const keep of [undefined, 'h1/vm-a', { 0: 'h1/vm-a' }]) {
      const err = await client
        .gc({ tag: 'web', keep: keep as unknown as string[], graceMs: 0 })
        .catch((e: unknown) => e);
      expect(err, JSON.stringify(keep)).toMatchObject({ code: 'ERR_INVALID_JOB' });
      expect((err as Error).message, JSON.stringify(keep)).toMatch(/^job\.gc\.keep: [^\n]*$/);
    }
  });

  it("an error Redis answers an enqueue with carries none of the request's data", async () => {
    // ioredis hangs a failed command's arguments on its error (`command.args`): for a create,
    // the whole request, user-data included, which an application logging the error would
    // write out. A user refused EVALSHA and EVAL is one real answer of that kind (an OOM of a
    // full Redis under noeviction, or a script's own error, are others).
    const user = `kvm2t-noscript-${randomUUID().slice(0, 8)}`;
    await scope.redis.call(
      'ACL',
      'SETUSER',
      user,
      'on',
      '>pw',
      '~*',
      '&*',
      '+@all',
      '-evalsha',
      '-eval',
    );
    const url = new URL(scope.url);
    url.username = user;
    url.password = 'pw';
    const refused = new Kvm2Client({ redisUrl: url.toString(), prefix: scope.prefix });
    const secret = `SECRET-${randomUUID()}`;
    try {
      const err = await refused
        .create({ ...request('web-secret', 'h5'), userData: `#cloud-config\n# ${secret}\n` })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/NOPERM/);
      expect(inspect(err, { depth: 20, showHidden: true })).not.toContain(secret);
      expect(JSON.stringify(pino.stdSerializers.err(err as Error))).not.toContain(secret);
      const del = await refused.delete('h5/web-secret').catch((e: unknown) => e);
      expect(inspect(del, { depth: 20, showHidden: true })).not.toContain('web-secret');
    } finally {
      await refused.close();
      await scope.redis.call('ACL', 'DELUSER', user);
    }
  });

  it('carries the active span as W3C trace context in the job data', async () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    const w3c: TextMapPropagator = {
      inject(ctx, carrier, setter) {
        const span = trace.getSpanContext(ctx);
        if (span === undefined) return;
        const flags = span.traceFlags.toString(16).padStart(2, '0');
        setter.set(carrier, 'traceparent', `00-${span.traceId}-${span.spanId}-${flags}`);
      },
      extract: (ctx) => ctx,
      fields: () => ['traceparent'],
    };
    propagation.setGlobalPropagator(w3c);
    try {
      const spanContext = {
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        spanId: '00f067aa0ba902b7',
        traceFlags: TraceFlags.SAMPLED,
      };
      const ctx = trace.setSpanContext(context.active(), spanContext);
      const enqueued = await context.with(ctx, () => client.create(request('traced', 'h5')));
      const job = await hostQueue('h5').getJob(enqueued.jobId);
      expect(job?.data).toMatchObject({
        traceContext: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
      });
    } finally {
      propagation.disable();
      context.disable();
    }
  });
});
