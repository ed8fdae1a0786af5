// A job whose workers died under it more than maxStalledCount times (docs/workers.md, "Errors →
// BullMQ"): BullMQ fails it without running it, and the worker that sees that writes the job's
// final result, `failed` with ERR_JOB_STALLED, for the attempt BullMQ counts, unless that
// attempt's last run already wrote one before it died (docs/results.md: one final result per
// job). The runtime in this process against real Redis; the stalls are written into the job's
// hash as BullMQ's stalled-job check leaves them (moveStalledJobsToWait: `stc` counted past the
// limit, the failure deferred in `defa`, the job back in wait), so no worker has to be killed
// four times. No libvirt host is dialed: the job is failed before any processor runs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue, type Job } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostQueueName, resultsKey } from '../../queues/names.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { startWorker, type WorkerRuntime } from '../../workers/runtime.js';
import { waitUntil } from '../harness/fault-kit.js';
import { redisScope, type RedisScope } from '../harness/redis.js';
import { resultsOfJob } from '../harness/results.js';
import { memoryLogger } from '../harness/telemetry.js';

let scope: RedisScope;
let dir: string;
let runtime: WorkerRuntime | undefined;
let queue: Queue;
const { logger } = memoryLogger('warn');

beforeAll(async () => {
  scope = await redisScope('wstall');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-wstall-'));
  queue = new Queue(hostQueueName('hv1'), { connection: scope.redis, prefix: scope.prefix });
});

afterEach(async () => {
  await runtime?.close({ force: true });
  runtime = undefined;
}, 30_000);

afterAll(async () => {
  await queue?.close();
  await scope?.cleanup();
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
}, 30_000);

/** One job at a time on host.hv1, so its jobs fail in the order they were queued. */
async function startRuntime(): Promise<void> {
  runtime = await startWorker(
    parseConfig({
      redis: { url: scope.url, prefix: scope.prefix },
      hosts: [
        {
          name: 'hv1',
          uri: `qemu+unix:///system?socket=${dir}/absent-sock`,
          network: 'default',
          concurrency: 1,
        },
      ],
      events: { watch: false },
      health: { every: '600s', timeout: '10s' },
      worker: { listen: '127.0.0.1:0', shutdownTimeout: '500ms' },
    }),
    { logger },
  );
}

/** The producer's trace context, as a client under an OTel SDK puts it in the job's data. */
const TRACE_CONTEXT = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };

/** A `get` whose workers died under its first attempt 4 times: BullMQ fails it when taken. */
async function stalledOutJob(): Promise<Job> {
  const job = await queue.add(
    'get',
    { id: 'hv1/nope', traceContext: TRACE_CONTEXT },
    { attempts: 3 },
  );
  await scope.redis.hset(`${scope.prefix}:${queue.name}:${job.id ?? ''}`, {
    defa: 'job stalled more than allowable limit',
    stc: '4',
    ats: '4',
  });
  return job;
}

async function failedJob(id: string): Promise<Job> {
  await waitUntil(async () => (await queue.getJobState(id)) === 'failed', 15_000, 'failed');
  const job = await queue.getJob(id);
  if (job === undefined) throw new Error(`job ${id} is gone`);
  return job;
}

describe('a job BullMQ fails for stalling too often', () => {
  it('gets one failed result, ERR_JOB_STALLED, for the attempt BullMQ counts', async () => {
    const queued = await stalledOutJob();
    await startRuntime();
    const job = await failedJob(queued.id ?? '');
    await waitUntil(
      async () => (await resultsOfJob(scope.redis, scope.prefix, job.id ?? '')).length > 0,
      10_000,
      'its result',
    );
    const results = await resultsOfJob(scope.redis, scope.prefix, job.id ?? '');
    expect(job.attemptsMade).toBe(1);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({
      outcome: 'failed',
      errorCode: 'ERR_JOB_STALLED',
      errorKind: 'transient',
      attempt: job.attemptsMade,
      // This process runs no OTel SDK: the producer's own context is what the result carries.
      traceContext: TRACE_CONTEXT,
    });
    // Counted as every failed attempt is (docs/operations.md: what operators watch).
    expect(runtime?.metrics.render()).toContain(
      'kvm2_jobs_total{queue="host.hv1",op="get",outcome="failed"} 1\n',
    );
  });

  it("keeps the final result its attempt's last run wrote before it died: no second one", async () => {
    // The last run of attempt 1 wrote its final result and named it in the job's hash
    // (append-result-once.lua), then its worker died before BullMQ heard.
    const queued = await stalledOutJob();
    const id = queued.id ?? '';
    const written = await scope.redis.xadd(
      resultsKey(scope.prefix),
      '*',
      ...['jobId', id, 'op', 'get', 'outcome', 'succeeded', 'attempt', '1'],
      ...['timestamp', String(Date.now()), 'instanceId', 'hv1/nope', 'state', 'running'],
    );
    await scope.redis.hset(`${scope.prefix}:${queue.name}:${id}`, 'kvm2Final', `1 ${written}`);
    // Failed after it on the same connection: once the marker's result is on the stream, the
    // report for the job under test has been written, or skipped.
    const marker = await stalledOutJob();
    await startRuntime();
    await failedJob(id);
    await waitUntil(
      async () => (await resultsOfJob(scope.redis, scope.prefix, marker.id ?? '')).length > 0,
      15_000,
      "the marker job's result",
    );
    const results = await resultsOfJob(scope.redis, scope.prefix, id);
    expect(results.map((r) => [r.outcome, r.attempt])).toEqual([['succeeded', 1]]);
  });
});

describe('what a run reports, without an OTel SDK in the worker', () => {
  it("a result carries the producer's trace context; an unknown job name is no metric label", async () => {
    await startRuntime();
    const bad = await queue.add('get', { id: 'hv1/Not A Name', traceContext: TRACE_CONTEXT });
    const unknownName = `no-such-op-${Math.random().toString(36).slice(2)}`;
    const unknown = await queue.add(unknownName, {});
    for (const job of [bad, unknown]) await failedJob(job.id ?? '');
    await waitUntil(
      async () => (await resultsOfJob(scope.redis, scope.prefix, unknown.id ?? '')).length > 0,
      10_000,
      'the results',
    );
    const [result] = await resultsOfJob(scope.redis, scope.prefix, bad.id ?? '');
    expect(result).toMatchObject({ errorCode: 'ERR_INVALID_JOB', traceContext: TRACE_CONTEXT });
    // Any name anyone adds to a queue would be a series of its own, kept for the process's life.
    const metrics = runtime?.metrics.render() ?? '';
    expect(metrics).not.toContain(unknownName);
    expect(metrics).toContain(
      'kvm2_jobs_total{queue="host.hv1",op="unknown",outcome="failed"} 1\n',
    );
  });
});
