// A worker process's runtime (SPEC §8): one BullMQ Worker per served host queue, with the
// host's concurrency as that queue's global concurrency (so all processes together never
// exceed it), one each on `gc` and `health`, the health job schedulers, and an orderly close
// that ends, on its own, within shutdownTimeout plus 5 s even during a Redis outage. The start
// waits for Redis as long as Redis is away; its signal ends it. workers/process.ts adds signals
// and the HTTP endpoints around it.
import { trace, type Tracer } from '@opentelemetry/api';
import { Queue, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { pruneHealth } from '../queues/health.js';
import { RETENTION } from '../queues/job-options.js';
import { GC_QUEUE, HEALTH_QUEUE, hostQueueName } from '../queues/names.js';
import {
  checkDatabase,
  createWorkerConnection,
  redisEndpoint,
  redisTarget,
  type RedisConnection,
} from '../queues/redis.js';
import type { JobName } from '../queues/registry.js';
import { appendRunResult } from '../queues/results.js';
import type { Kvm2Config } from '../src/provider/config/schema.js';
import { Provider } from '../src/provider/provider.js';
import type { WorkerServices } from './run/services.js';
import { startEventWatchers, type EventWatchers } from './events/watchers.js';
import { RedisLocks } from './locks/redis-locks.js';
import { HostBreakers } from './run/host-breaker.js';
import { JobRuns } from './run/cancellation.js';
import { RedisLiveness } from './run/redis-liveness.js';
import { sweepRetentionEvery } from './run/retention.js';
import { WorkerMetrics } from './run/metrics.js';
import { instanceOf, makeProcessor, opLabel, producerTraceContext } from './runner.js';
import { completingBackend } from './run/completion.js';
import { DroppableWorker, dropConnection } from './droppable-worker.js';

const HEALTH_SCHEDULER_PREFIX = 'health:';
/** gc and health jobs at once per process: they are light, and mostly wait on hosts. */
const FLEET_CONCURRENCY = 4;
/** How many times a job's worker may die under it before BullMQ fails the job. */
const MAX_STALLED = 3;
/** BullMQ's failedReason for such a job (bullmq 6 worker.ts). */
const STALLED_OUT = /stalled more than allowable limit/;
/**
 * After the graceful bound, how long the rest of the teardown may take in all: cancelled jobs
 * releasing themselves, BullMQ's close, the queues' close, QUIT, then the drop of whatever
 * still waits on Redis. One budget, so a shutdown during a Redis outage ends within
 * shutdownTimeout plus this.
 */
const TEARDOWN_BOUND_MS = 5_000;
/**
 * The end of that budget kept for the drop: ioredis gives a dropped connection whose socket is
 * already gone its `disconnectTimeout` (2 s) before it gives up on it, and that timer holds the
 * process meanwhile.
 */
const DROP_RESERVE_MS = 2_000;

export interface WorkerOptions {
  /** Host queues to serve (default: every configured host). gc and health are always served. */
  readonly hosts?: readonly string[] | undefined;
  readonly logger: Logger;
  readonly tracer?: Tracer | undefined;
  /** Where the runtime counts (default: its own); the process serves it before the start ends. */
  readonly metrics?: WorkerMetrics | undefined;
  /**
   * Ends a start still under way (it waits for Redis as long as Redis is away): what it made
   * is dropped, and startWorker rejects with the signal's reason. No effect once started.
   */
  readonly signal?: AbortSignal | undefined;
}

export interface WorkerRuntime {
  readonly metrics: WorkerMetrics;
  /** Queues served, in order. */
  readonly queues: readonly string[];
  /** The hosts whose events this process publishes now (holds the watch lease of). */
  watching(): string[];
  /**
   * Redis connected and answering, every worker running (or paused: its host is away), not
   * shutting down.
   */
  ready(): boolean;
  /**
   * Stops taking jobs and waits up to `worker.shutdownTimeout` for active ones; then cancels
   * them (each is released to its queue, no attempt spent) and closes. `force` skips the wait.
   */
  close(options?: { readonly force?: boolean }): Promise<void>;
}

export function selectHosts(config: Kvm2Config, hosts: readonly string[] | undefined): string[] {
  const all = config.hosts.map((h) => h.name);
  if (hosts === undefined) return all;
  const unknown = hosts.filter((h) => !all.includes(h));
  if (unknown.length > 0) {
    throw new RangeError(
      `--hosts: ${unknown.map((h) => `'${h}'`).join(', ')} not in the configuration (hosts: ${all.join(', ')})`,
    );
  }
  return [...new Set(hosts)];
}

export async function startWorker(
  config: Kvm2Config,
  options: WorkerOptions,
): Promise<WorkerRuntime> {
  const { signal } = options;
  signal?.throwIfAborted();
  const hosts = selectHosts(config, options.hosts);
  const logger = options.logger;
  const target = redisTarget(config.redis);
  const redis = createWorkerConnection(target);
  redis.on('error', (err: Error) => {
    logger.warn({ redis: redisEndpoint(target), err: err.message }, 'redis error');
  });
  const workers: DroppableWorker[] = [];
  // The start waits for Redis for as long as it is away; the signal ends the wait, and the
  // drop rejects whatever the start still waits on.
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal?.reason as Error);
  });
  signal?.addEventListener('abort', onAbort, { once: true });
  const starting = start(config, options, hosts, redis, workers);
  starting.catch(() => undefined); // when the signal won, its end is of no interest
  try {
    return await Promise.race([starting, aborted]);
  } catch (err) {
    drop(workers, redis);
    throw err;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/** startWorker's steps, each worker it makes added to `workers` as it is made. */
async function start(
  config: Kvm2Config,
  options: WorkerOptions,
  hosts: readonly string[],
  redis: RedisConnection,
  workers: DroppableWorker[],
): Promise<WorkerRuntime> {
  const { logger, signal } = options;
  const prefix = config.redis.prefix;
  await redis.ping();
  checkDatabase(redis, redisTarget(config.redis));
  await warnUnlessNoEviction(redis, logger);

  const tracer = options.tracer ?? trace.getTracer('kvm2');
  const locks = new RedisLocks({ client: redis, prefix, ttlMs: config.worker.lockTtl });
  // Outside a job (none today) the provider would wait for a busy key; jobs use their own view.
  const provider = new Provider(config, { locks, logger, tracer });
  const producerQueues = new Map<string, Queue>();
  const queueFor = (name: string): Queue => {
    let queue = producerQueues.get(name);
    if (queue === undefined) {
      queue = new Queue(name, { connection: redis, prefix });
      // The connection's errors, logged from the connection itself: unheard, BullMQ would
      // print each one on stderr.
      queue.on('error', () => undefined);
      producerQueues.set(name, queue);
    }
    return queue;
  };
  let releasing = false;
  const runs = new JobRuns();
  const metrics = options.metrics ?? new WorkerMetrics();
  // Filled in below, once the host queues' workers exist.
  const hostWorkers = new Map<string, DroppableWorker>();
  const breakers = new HostBreakers({
    pause: async (host) => hostWorkers.get(host)?.pause(true),
    resume: async (host) => hostWorkers.get(host)?.resume(),
    probe: async (host) => {
      await provider.ctx.hosts.shared(host);
    },
    logger,
    onChange: (host, open) => metrics.hostAway(host, open),
  });
  const env: WorkerServices = {
    config,
    prefix,
    provider,
    redis,
    locks,
    logger,
    tracer,
    metrics,
    queueFor,
    releasing: () => releasing,
    runs,
    breakers,
  };

  // The host's concurrency is global: any number of processes together stay within it.
  for (const host of config.hosts.filter((h) => hosts.includes(h.name))) {
    await queueFor(hostQueueName(host.name)).setGlobalConcurrency(host.concurrency);
  }
  await scheduleHealth(config, queueFor(HEALTH_QUEUE), redis, prefix);

  const served = [
    ...config.hosts
      .filter((h) => hosts.includes(h.name))
      .map((h) => ({ name: hostQueueName(h.name), concurrency: h.concurrency, host: h.name })),
    { name: GC_QUEUE, concurrency: FLEET_CONCURRENCY, host: undefined },
    { name: HEALTH_QUEUE, concurrency: FLEET_CONCURRENCY, host: undefined },
  ];
  // A reply that came in as the signal fired: no worker is made after it.
  signal?.throwIfAborted();
  for (const { name, concurrency, host } of served) {
    const worker = new DroppableWorker(
      name,
      makeProcessor(env, name),
      {
        connection: redis,
        prefix,
        concurrency,
        lockDuration: config.worker.stalledAfter,
        stalledInterval: config.worker.stalledAfter,
        // One dead worker (a deploy, an OOM kill) must not use up a job: it runs again.
        maxStalledCount: MAX_STALLED,
        // For jobs that come without retention of their own (a scheduler's, one added by hand).
        ...RETENTION,
      },
      // A completing run's result and lock release ride in BullMQ's completion, and the next
      // job's begin with them (completion.ts).
      completingBackend(redis, { lockTtlMs: locks.ttlMs, newToken: () => locks.newToken() }),
    );
    worker.on('error', (err) => {
      logger.warn({ queue: name, err: err.message }, 'worker error');
    });
    worker.on('failed', (job, err) => {
      if (job !== undefined) reportStalledOut(redis, prefix, logger, metrics, job, err);
    });
    if (host !== undefined) hostWorkers.set(host, worker);
    workers.push(worker);
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  signal?.throwIfAborted();
  const watchers: EventWatchers | undefined = config.events.watch
    ? startEventWatchers(env, hosts)
    : undefined;
  const liveness = new RedisLiveness(redis);
  const stopSweeps = sweepRetentionEvery(() => served.map((s) => queueFor(s.name)), logger);
  logger.info({ queues: served.map((s) => s.name), hosts }, 'worker started');

  let closing: Promise<void> | undefined;
  let shuttingDown = false;
  // A second request to close (a second signal) ends the graceful wait at once.
  let forceNow: () => void = () => undefined;
  const forced = new Promise<false>((resolve) => {
    forceNow = () => resolve(false);
  });
  const close = async (force: boolean): Promise<void> => {
    shuttingDown = true;
    liveness.close();
    stopSweeps();
    breakers.close();
    // First, so another process takes the hosts' events over while this one drains its jobs.
    const watchersClosed = watchers?.close();
    const graceful = Promise.all(workers.map((w) => w.close()));
    const inTime = force
      ? false
      : await Promise.race([within(graceful, config.worker.shutdownTimeout), forced]);
    const waitsEnd = Date.now() + TEARDOWN_BOUND_MS - DROP_RESERVE_MS;
    const left = (): number => Math.max(0, waitsEnd - Date.now());
    if (!inTime) {
      releasing = true;
      logger.warn({ active: metrics.activeTotal() }, 'shutdown: releasing the jobs still running');
      runs.cancelAll(new Error('worker shutting down'));
      // The cancelled runs release their jobs (a BullMQ move each); then BullMQ's close goes on.
      // Half the time left for that: a run whose cleanup (a fill's volumes, removed whatever the
      // cancel) waits on a wedged host link would hold its locks past the budget, and its job
      // would be left to BullMQ's stalled check. Then the host links are dropped: those calls
      // fail at once, and the runs release their jobs while Redis is still there.
      if (!(await within(graceful, left() / 2))) {
        void provider.close({ now: true });
        await within(graceful, left());
      }
    }
    await within(Promise.resolve(watchersClosed), left());
    const queuesClosed = Promise.allSettled([...producerQueues.values()].map((q) => q.close()));
    await within(queuesClosed, left());
    // Bounded too: a wedged link's ConnectClose waits its own 2 s before the link is destroyed.
    await within(provider.close(), left());
    // During a Redis outage QUIT would wait behind the offline queue (lease renewals, BullMQ's
    // lock extensions) for as long as the outage lasts: bounded, then dropped with the rest.
    if (redis.status === 'ready')
      await within(
        redis.quit().catch(() => undefined),
        left(),
      );
    // Whatever still waits on Redis (BullMQ's close and blocking reads during an outage) is
    // dropped: BullMQ's close(true) would return the graceful close's promise, and do nothing.
    // Dropping also closes a Sentinel connection's failover detector (closeConnection).
    drop(workers, redis);
    logger.info('worker stopped');
  };

  return {
    metrics,
    queues: served.map((s) => s.name),
    watching: () => watchers?.watching() ?? [],
    // A host queue paused because its host is away is not a worker out of order.
    ready: () =>
      !shuttingDown &&
      redis.status === 'ready' &&
      liveness.answering() &&
      workers.every((w) => w.isRunning() || w.isPaused()),
    close: (opts) => {
      if (opts?.force === true) forceNow();
      closing ??= close(opts?.force === true);
      return closing;
    },
  };
}

/** Ends the workers and the connection at once, whatever they still wait on (droppable-worker.ts). */
function drop(workers: readonly DroppableWorker[], redis: RedisConnection): void {
  for (const w of workers) w.drop();
  dropConnection(redis);
}

/**
 * A job whose workers died more than MAX_STALLED times is failed by BullMQ without calling the
 * processor, so the runner writes no result for it: this does, so waitFor and consumers learn
 * it failed (SPEC §8: every attempt's outcome is on the stream). The attempt is the one BullMQ
 * counted (its `failed` event comes after moveToFailed counted it). Written as a run's final
 * result is (append-result-once.lua), so an attempt whose last run wrote its final result
 * before its worker died keeps that one: one final result per job (docs/results.md).
 */
function reportStalledOut(
  redis: RedisConnection,
  prefix: string,
  logger: Logger,
  metrics: WorkerMetrics,
  job: Job,
  err: Error,
): void {
  if (!STALLED_OUT.test(err.message)) return;
  // Counted with every failed attempt; no duration: no run of it ended in this process.
  metrics.outcome(job.queueName, opLabel(job.name), 'failed');
  const jobId = job.id ?? '';
  const result = {
    jobId,
    op: job.name as JobName,
    outcome: 'failed',
    attempt: job.attemptsMade,
    timestamp: Date.now(),
    instanceId: instanceOf(job.data),
    errorKind: 'transient',
    errorCode: 'ERR_JOB_STALLED',
    traceContext: producerTraceContext(job.data),
    message: `its worker stopped ${job.stalledCounter} times while running it (killed, or blocked longer than worker.stalledAfter)`,
  } as const;
  appendRunResult(redis, prefix, result, `${prefix}:${job.queueName}:${jobId}`).catch(
    (e: unknown) => {
      logger.warn({ job: job.id, err: (e as Error).message }, 'could not append a result');
    },
  );
}

/** Resolves true when `work` settles within `ms`, false otherwise (work goes on). */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One job scheduler per configured host (upsert: restarts never duplicate one), and none for a
 * host that left the configuration; its stale health report goes too.
 */
async function scheduleHealth(
  config: Kvm2Config,
  queue: Queue,
  redis: RedisConnection,
  prefix: string,
): Promise<void> {
  const names = config.hosts.map((h) => h.name);
  for (const host of names) {
    await queue.upsertJobScheduler(
      `${HEALTH_SCHEDULER_PREFIX}${host}`,
      { every: config.health.every },
      {
        name: 'health',
        data: { host },
        opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 }, attempts: 1 },
      },
    );
  }
  const schedulers = await queue.getJobSchedulers(0, -1);
  for (const s of schedulers) {
    const id = s.key;
    if (
      id.startsWith(HEALTH_SCHEDULER_PREFIX) &&
      !names.includes(id.slice(HEALTH_SCHEDULER_PREFIX.length))
    ) {
      await queue.removeJobScheduler(id);
    }
  }
  await pruneHealth(redis, prefix, names);
}

/** SPEC §8: RedisConnection must not evict BullMQ's keys; say so at start when it might. */
async function warnUnlessNoEviction(redis: RedisConnection, logger: Logger): Promise<void> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy !== 'noeviction') {
      logger.warn(
        { policy },
        `redis maxmemory-policy is '${policy ?? 'unknown'}', not 'noeviction': RedisConnection may evict job keys under memory pressure`,
      );
    }
  } catch (err) {
    logger.warn(
      { err: (err as Error).message },
      'could not read redis maxmemory-policy (CONFIG GET refused); make sure it is noeviction',
    );
  }
}
