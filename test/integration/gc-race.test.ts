// processGc (workers/processors/fleet.ts) against the real Redis and BullMQ: a request for an
// instance made while the GC lists the hosts wins over the GC, because the GC reads the request
// count before it lists. The provider here only lists: a real host's listing takes its time, and
// an app's request landing inside it is a timing no real daemon can be made to show on cue.
import { Queue } from 'bullmq';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Kvm2Client } from '../../queues/client.js';
import { isSuperseded } from '../../queues/generations.js';
import { GC_QUEUE, hostQueueName } from '../../queues/names.js';
import type { Instance } from '../../src/provider/core/instance.js';
import type { JobRun } from '../../workers/run/job-run.js';
import type { WorkerServices } from '../../workers/run/services.js';
import { RedisLocks } from '../../workers/locks/redis-locks.js';
import { processGc } from '../../workers/processors/fleet.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
let client: Kvm2Client;
let queue: Queue;

beforeAll(async () => {
  scope = await redisScope('gc-race');
  client = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
  queue = new Queue(hostQueueName('h1'), { connection: scope.redis, prefix: scope.prefix });
});

afterAll(async () => {
  await queue?.close();
  await client?.close();
  await scope?.cleanup();
});

function gcServices(provider: unknown): WorkerServices {
  return {
    config: { hosts: [] },
    prefix: scope.prefix,
    provider,
    redis: scope.redis,
    locks: new RedisLocks({ client: scope.redis, prefix: scope.prefix }),
    logger: pino({ level: 'silent' }),
    queueFor: () => queue,
  } as unknown as WorkerServices;
}

/** processGc on `env` with this job data; the result's message ('' for a step of another type). */
async function runGc(
  env: WorkerServices,
  data: unknown,
  logger = env.logger,
): Promise<{ step: Awaited<ReturnType<typeof processGc>>; message: string }> {
  const controller = new AbortController();
  const step = await processGc({
    services: env,
    name: 'gc',
    data,
    controller,
    signal: controller.signal,
    logger,
  } as unknown as JobRun<'gc'>);
  return { step, message: step.type === 'result' ? (step.fields.message ?? '') : '' };
}

function request(name: string) {
  return { host: 'h1', name, image: 'debian-12', tag: 'ci', userData: '#cloud-config\n' };
}

it('a create made while the GC lists the hosts wins: its instance is left alone this round', async () => {
  await client.create(request('listed'));
  await client.create(request('stale'));
  const longAgo = '2020-01-01T00:00:00.000Z';
  const listing = ['h1/listed', 'h1/stale'].map((id) => ({ id, createdAt: longAgo }) as Instance);
  const provider = {
    listByTag: async () => {
      // An app replaces one of the instances while its host is being listed.
      await client.create(request('listed'));
      return listing;
    },
    withLocks: () => provider,
    sweepOrphanVolumes: () => Promise.resolve({ removed: [] }),
  };
  const env = gcServices(provider);

  const { step, message } = await runGc(env, { tag: 'ci', keep: [], graceMs: 0 });
  expect(step).toMatchObject({ type: 'result', outcome: 'succeeded' });
  expect(message).toContain('deleting 1');
  expect(message).toContain('1 requested since the GC was asked for');
  const deletes = (await queue.getJobs(['waiting', 'prioritized']))
    .filter((j) => j.name === 'delete')
    .map((j) => (j.data as { id: string }).id);
  expect(deletes).toEqual(['h1/stale']);
});

it('a create made after the app asked for the GC, before the GC began, wins too', async () => {
  // The soak found it: the app's keep list is as of its gc() call, so a create it sends after
  // that call (the GC still waiting in its queue) must not be taken for a victim.
  await client.create(request('old'));
  await client.create(request('replaced'));
  const gcQueue = new Queue(GC_QUEUE, { connection: scope.redis, prefix: scope.prefix });
  try {
    const { jobId } = await client.gc({ tag: 'ci', keep: [], graceMs: 0 });
    await client.create(request('replaced')); // after the gc() call, before the GC runs
    const job = await gcQueue.getJob(jobId);
    const longAgo = '2020-01-01T00:00:00.000Z';
    const listing = ['h1/old', 'h1/replaced'].map((id) => ({ id, createdAt: longAgo }) as Instance);
    const provider = {
      listByTag: () => Promise.resolve(listing),
      withLocks: () => provider,
      sweepOrphanVolumes: () => Promise.resolve({ removed: [] }),
    };
    const env = gcServices(provider);
    await queue.drain();
    const { message } = await runGc(env, job?.data as unknown);
    expect(message).toContain('deleting 1');
    const deletes = (await queue.getJobs(['waiting', 'prioritized']))
      .filter((j) => j.name === 'delete')
      .map((j) => (j.data as { id: string }).id);
    expect(deletes).toEqual(['h1/old']);
  } finally {
    await gcQueue.close();
  }
});

it("a create that replaces a victim, enqueued before the GC and not yet run, is not superseded by the GC's delete", async () => {
  // The app replaces a green instance with a blue one of the same name, then collects green.
  // The listing still shows the green instance (the create has not run): a delete by name
  // would supersede the blue create, and the name would end up deleted. A victim's delete
  // goes out only while the instance's last request is not a create of another uid.
  const blue = await client.create({ ...request('swapped'), tag: 'blue' });
  const own = await client.create(request('own')); // its last request is its own create
  const gcQueue = new Queue(GC_QUEUE, { connection: scope.redis, prefix: scope.prefix });
  try {
    const { jobId } = await client.gc({ tag: 'ci', keep: [], graceMs: 0 });
    const job = await gcQueue.getJob(jobId);
    const longAgo = '2020-01-01T00:00:00.000Z';
    const listing = [
      { id: 'h1/swapped', uid: '7d1c3a52-9d4b-4f0e-8a6c-1f2e3d4c5b6a', createdAt: longAgo },
      { id: 'h1/own', uid: own.uid, createdAt: longAgo },
      { id: 'h1/unrequested', uid: '5b0e7c1d-2a3f-4b6c-9d8e-0f1a2b3c4d5e', createdAt: longAgo },
    ] as Instance[];
    const provider = {
      listByTag: () => Promise.resolve(listing),
      withLocks: () => provider,
      sweepOrphanVolumes: () => Promise.resolve({ removed: [] }),
    };
    const env = gcServices(provider);
    await queue.drain();
    const { message } = await runGc(env, job?.data as unknown);
    expect(message).toContain('deleting 2');
    const deletes = (await queue.getJobs(['waiting', 'prioritized']))
      .filter((j) => j.name === 'delete')
      .map((j) => (j.data as { id: string }).id)
      .sort();
    expect(deletes).toEqual(['h1/own', 'h1/unrequested']);
    expect(await isSuperseded(scope.redis, scope.prefix, 'h1/swapped', blue.generation)).toBe(
      false,
    );
  } finally {
    await gcQueue.close();
  }
});

it('a kept id that names no listed instance is said in the result and a warning, not silently ignored', async () => {
  // A mistyped host or name keeps nothing: the instance meant is deleted with the rest, and
  // the round's result says which kept ids matched nothing so the caller can see why.
  const { uid } = await client.create(request('meant'));
  const longAgo = '2020-01-01T00:00:00.000Z';
  const provider = {
    listByTag: () => Promise.resolve([{ id: 'h1/meant', uid, createdAt: longAgo } as Instance]),
    withLocks: () => provider,
    sweepOrphanVolumes: () => Promise.resolve({ removed: [] }),
  };
  const warnings: unknown[] = [];
  const env = gcServices(provider);
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => warnings.push(JSON.parse(line)) },
  );
  const { message } = await runGc(
    env,
    { tag: 'ci', keep: ['hl/meant', 'h1/gone'], graceMs: 0 },
    logger,
  );
  expect(message).toContain('deleting 1 (0 kept');
  expect(message).toContain('2 kept ids name no instance of the tag: hl/meant, h1/gone');
  expect(warnings).toEqual([
    expect.objectContaining({ unmatched: ['hl/meant', 'h1/gone'], tag: 'ci' }),
  ]);
});
