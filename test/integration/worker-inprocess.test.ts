// The worker runtime in this process, where the test can hold its tracer and logger: trace
// continuity from producer to worker (in-memory exporter), GC over real instances, the health
// job schedulers (one per host however often the worker restarts) and the health hash, the
// /healthz /readyz /metrics endpoints, and the eviction-policy warning.
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readHealth } from '../../queues/health.js';
import { HEALTH_QUEUE } from '../../queues/names.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { serveEndpoints, type Endpoints } from '../../workers/endpoints.js';
import { startWorker, type WorkerRuntime } from '../../workers/runtime.js';
import { startQueueFleet, type QueueFleet } from '../harness/queue-fleet.js';
import { resultsOfJob } from '../harness/results.js';
import { testHost } from '../harness/test-host.js';
import { virsh } from '../harness/virsh.js';
import { memoryLogger, memoryTracing } from '../harness/telemetry.js';

const { exporter, tracerProvider } = memoryTracing('kvm2');
const contextManager = new AsyncLocalStorageContextManager();
const { logger, lines: logLines } = memoryLogger('debug');

let fleet: QueueFleet;
let runtime: WorkerRuntime | undefined;

beforeAll(async () => {
  context.setGlobalContextManager(contextManager.enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
  fleet = await startQueueFleet('wi');
  runtime = await startWorker(fleet.config(), {
    logger,
    tracer: tracerProvider.getTracer('kvm2'),
  });
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await fleet?.cleanup();
  trace.disable();
  propagation.disable();
  context.disable();
}, 120_000);

describe('trace continuity', () => {
  it("the worker's job span carries the producer's trace id", async () => {
    const client = fleet.client();
    try {
      const producer = tracerProvider.getTracer('upstream-app');
      const { jobId, traceId } = await producer.startActiveSpan('enqueue', async (span) => {
        try {
          const queued = await client.delete(`h1/${fleet.name('traced')}`);
          return { jobId: queued.jobId, traceId: span.spanContext().traceId };
        } finally {
          span.end();
        }
      });
      const result = await client.waitFor(jobId, { timeoutMs: 30_000 });
      expect(result.outcome).toBe('succeeded');
      // The result is appended inside the job's span, which ends just after.
      const findSpan = () =>
        exporter
          .getFinishedSpans()
          .find((s) => s.name === 'kvm2.job.delete' && s.attributes['kvm2.job.id'] === jobId);
      for (let i = 0; i < 50 && findSpan() === undefined; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const jobSpan = findSpan();
      expect(jobSpan).toBeDefined();
      expect(jobSpan?.spanContext().traceId).toBe(traceId);
      // The provider's spans nest under it, and the result names the same trace.
      const deleteSpan = exporter.getFinishedSpans().find((s) => s.name === 'provider.delete');
      expect(deleteSpan?.spanContext().traceId).toBe(traceId);
      expect(result.traceContext?.traceparent.split('-')[1]).toBe(traceId);
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe('gc', () => {
  it('removes only the tagged, unkept, old-enough instances', async () => {
    const client = fleet.client();
    try {
      const tag = `gc-${fleet.namePrefix}`;
      const make = async (suffix: string, instanceTag: string) => {
        const queued = await client.create(
          { host: 'h1', name: fleet.name(suffix), image: fleet.image, tag: instanceTag },
          { wait: false },
        );
        expect((await client.waitFor(queued.jobId, { timeoutMs: 60_000 })).outcome).toBe(
          'succeeded',
        );
        return queued.id;
      };
      const old = await make('gc-old', tag);
      const kept = await make('gc-kept', tag);
      const other = await make('gc-other', `${tag}-x`);
      // Grace: everything made so far is older than it; the next one is not. The young one's
      // age at the GC is its create's boot and the GC's enqueue and listing, about 1.5 s here:
      // 5 s leaves room for a loaded machine.
      const graceMs = 5_000;
      await new Promise((r) => setTimeout(r, graceMs + 500));
      const young = await make('gc-young', tag);

      const round = await client.gc({ tag, keep: [kept], graceMs });
      const gcResult = await client.waitFor(round.jobId, { timeoutMs: 60_000 });
      expect(gcResult.outcome).toBe('succeeded');
      expect(gcResult.message).toMatch(/deleting 1 /);

      // The delete GC enqueued runs through the host queue; wait for the domain to go.
      const deadline = Date.now() + 60_000;
      while ((await fleet.domains()).includes(fleet.name('gc-old')) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
      }
      const domains = await fleet.domains();
      expect(domains).not.toContain(old.split('/')[1]);
      expect(domains).toEqual(
        expect.arrayContaining([kept, other, young].map((id) => id.split('/')[1])),
      );
    } finally {
      await client.close();
    }
  }, 180_000);

  it('deletes nothing when a host cannot be listed (no partial view)', async () => {
    // A second host whose sshd port is closed: listByTag fails whole, so GC retries and the
    // tagged instance on h1 stays.
    // Its own key prefix: the file's shared worker (h1 only) must not take this GC job.
    const config = fleet.configObject({
      redis: { url: fleet.scope.url, prefix: `${fleet.scope.prefix}-p` },
      hosts: [
        testHost(fleet.sshd, fleet.net.name, { concurrency: 2 }),
        {
          ...testHost(fleet.sshd, fleet.net.name),
          name: 'h2',
          uri: 'qemu+ssh://root@127.0.0.1:1/system',
        },
      ],
    });
    const second = await startWorker(parseConfig(config), { logger });
    const client = fleet.client(config);
    try {
      const tag = `gcp-${fleet.namePrefix}`;
      const queued = await client.create(
        { host: 'h1', name: fleet.name('gcp'), image: fleet.image, tag },
        { wait: false },
      );
      // The instance GC must leave alone is there, or the test below proves nothing.
      expect((await client.waitFor(queued.jobId, { timeoutMs: 60_000 })).outcome).toBe('succeeded');
      expect(await fleet.domains()).toContain(fleet.name('gcp'));
      const round = await client.gc({ tag, keep: [], graceMs: 0 });
      // The first attempt's result is `retrying` (transient: the host may come back).
      const deadline = Date.now() + 30_000;
      const prefix = `${fleet.scope.prefix}-p`;
      let results = await resultsOfJob(fleet.scope.redis, prefix, round.jobId);
      while (results.length === 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        results = await resultsOfJob(fleet.scope.redis, prefix, round.jobId);
      }
      expect(results[0]).toMatchObject({ outcome: 'retrying', errorKind: 'transient' });
      expect(await fleet.domains()).toContain(fleet.name('gcp'));
      // Stop it retrying for the rest of the file.
      await new Queue('gc', { connection: fleet.scope.redis, prefix })
        .remove(round.jobId)
        .catch(() => undefined);
    } finally {
      await client.close();
      await second.close({ force: true });
    }
  }, 120_000);
});

describe('health', () => {
  it('one job scheduler per host after two restarts, and the health hash filled', async () => {
    const config = fleet.config({ health: { every: '1s', timeout: '1s' } });
    for (let i = 0; i < 2; i++) {
      const again = await startWorker(config, { logger });
      await again.close();
    }
    const extra = await startWorker(config, { logger });
    try {
      const queue = new Queue(HEALTH_QUEUE, {
        connection: fleet.scope.redis,
        prefix: fleet.scope.prefix,
      });
      const schedulers = await queue.getJobSchedulers(0, -1);
      expect(schedulers.map((s) => s.key)).toEqual(['health:h1']);
      await queue.close();

      const deadline = Date.now() + 30_000;
      let reports = await readHealth(fleet.scope.redis, fleet.scope.prefix);
      while (!reports.has('h1') && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        reports = await readHealth(fleet.scope.redis, fleet.scope.prefix);
      }
      const report = reports.get('h1');
      expect(report).toMatchObject({ host: 'h1', status: 'healthy', reason: 'ok' });
      expect(report?.details.libvirtVersion).toBe('9.0.0');
    } finally {
      await extra.close();
    }
  }, 120_000);
});

describe('placement by zone', () => {
  it('a create that names a zone lands on a healthy host of that zone, from the health hash', async () => {
    // The health test above filled the hash for h1; give h1 a zone in the client's view.
    const zoned = { hosts: [testHost(fleet.sshd, fleet.net.name, { concurrency: 2, zone: 'z1' })] };
    const client = fleet.client(zoned);
    try {
      const queued = await client.create(
        { zone: 'z1', name: fleet.name('zoned'), image: fleet.image },
        { wait: false },
      );
      expect(queued.id).toBe(`h1/${fleet.name('zoned')}`);
      expect((await client.waitFor(queued.jobId, { timeoutMs: 60_000 })).outcome).toBe('succeeded');
      await expect(
        client.create({ zone: 'z9', name: fleet.name('nozone'), image: fleet.image }),
      ).rejects.toThrow(/no configured host is in zone 'z9'/);
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe('endpoints', () => {
  let endpoints: Endpoints | undefined;
  afterAll(async () => endpoints?.close());

  it('/healthz, /readyz and /metrics answer; /readyz is 503 once shutdown begins', async () => {
    const own = await startWorker(fleet.config(), { logger });
    endpoints = await serveEndpoints(own, { host: '127.0.0.1', port: 0 });
    expect((await fetch(`${endpoints.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${endpoints.url}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${endpoints.url}/metrics`)).text();
    expect(metrics).toContain('# TYPE kvm2_jobs_total counter');
    expect((await fetch(`${endpoints.url}/nope`)).status).toBe(404);
    const closing = own.close();
    expect((await fetch(`${endpoints.url}/readyz`)).status).toBe(503);
    await closing;
  }, 60_000);

  it('the shared runtime counted the jobs it ran', () => {
    const metrics = runtime?.metrics.render() ?? '';
    expect(metrics).toMatch(
      /kvm2_jobs_total\{queue="host\.h1",op="delete",outcome="succeeded"\} [1-9]/,
    );
  });
});

describe('redis eviction policy', () => {
  it('the worker warns at start when maxmemory-policy is not noeviction', async () => {
    const before = (await fleet.scope.redis.config('GET', 'maxmemory-policy')) as string[];
    await fleet.scope.redis.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const own = await startWorker(fleet.config(), { logger });
      await own.close();
      expect(
        logLines.some(
          (l) => String(l['msg']).includes("not 'noeviction'") && l['policy'] === 'allkeys-lru',
        ),
      ).toBe(true);
    } finally {
      await fleet.scope.redis.config('SET', 'maxmemory-policy', before[1] ?? 'noeviction');
    }
  }, 60_000);
});

it('no log line carries user-data', async () => {
  const client = fleet.client();
  const sentinel = `secret-${Math.random().toString(36).slice(2)}`;
  try {
    const queued = await client.create(
      {
        host: 'h1',
        name: fleet.name('secret'),
        image: fleet.image,
        userData: `#cloud-config\nruncmd: [echo ${sentinel}]\n`,
      },
      { wait: false },
    );
    // The create ran the whole path (seed built, uploaded, domain started): a failed one would
    // leave less for the logs to leak.
    expect((await client.waitFor(queued.jobId, { timeoutMs: 60_000 })).outcome).toBe('succeeded');
    expect(JSON.stringify(logLines)).not.toContain(sentinel);
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toContain(
      sentinel,
    );
    expect(await virsh(['domstate', fleet.name('secret')])).toContain('running');
  } finally {
    await client.close();
  }
}, 60_000);
