// One timed burst, as every side runs it: the jobs enqueued at once, the queue drained, and the
// round's figures read back from the completed jobs; with what the sides share (the queue, the
// retention, the test-driver host, a bare connection).
import { performance } from 'node:perf_hooks';
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { DEFAULT_JOB_OPTIONS } from '../../queues/job-options.js';
import { hostQueueName } from '../../queues/names.js';
import { REDIS_URL } from '../../test/harness/redis.js';
import type { Sshd } from '../../test/harness/sshd.js';
import { CONCURRENCY } from './args.js';
import { machineTicks, ownWrites, sampleTicks, TICK_US, type Groups } from './proc-cpu.js';

export const QUEUE = hostQueueName('h1');
const POLL_MS = 20;
const DRAIN_TIMEOUT_MS = 300_000;
/** kvm2's retention for deletes: every side keeps (and trims) finished jobs alike. */
const { attempts: _attempts, backoff: _backoff, ...RETENTION } = DEFAULT_JOB_OPTIONS.delete;
export { RETENTION };

export interface Round {
  /** jobs/s */
  readonly throughput: number;
  readonly p50: number;
  readonly p99: number;
  readonly wallMs: number;
  /** CPU per job, µs: `node` is this process (producer and worker), then the others. */
  readonly cpuUs: Readonly<Record<string, number>>;
  /** Commands this process sent to Redis, per job (each its own write unless pipelined). */
  readonly sentPerJob: number;
  /** Commands for the other queues while they stood empty (kvm2's gc and health), per job. */
  readonly idlePerJob: number;
  /** This process's write syscalls per job (Redis commands, SSH packets). */
  readonly writesPerJob: number;
  /**
   * The share of the machine's CPU left idle during the round (all cores): near 0 when the
   * round is bound by CPU, so that CPU per job decides its throughput.
   */
  readonly idleShare: number;
  /** This process's event-loop utilisation during the round (its main thread's busy share). */
  readonly elu: number;
}

// Every command this process sends on the job path, whichever connection: what a job costs in
// requests. The observer's connection (each side's, polling for the round's end and reading
// the jobs back) is the bench's own and not counted (observerConnection).
// kvm2's worker also serves the gc and health queues: what it sends for those while they stand
// empty (BullMQ's fetches when woken) is counted apart, as idle polls.
// A command's first key is its first argument (BZPOPMIN, HGET …) or its third (EVALSHA sha
// numkeys key …): only those are looked at, so the count costs each side the same whatever
// the number of arguments its commands carry (kvm2's scripts carry dozens, BullMQ's fewer).
let sent = 0;
let idle = 0;
const unmetered = new WeakSet<Redis>();
/** A key of kvm2's gc or health queue. */
const idleQueueKey = (a: unknown): boolean =>
  typeof a === 'string' && (a.includes(':gc:') || a.includes(':health:'));
// eslint-disable-next-line @typescript-eslint/unbound-method -- re-bound by apply() below
const sendCommand = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
  if (!unmetered.has(this)) {
    const a = args[0]?.args ?? [];
    if (idleQueueKey(a[0]) || idleQueueKey(a[2])) idle++;
    else sent++;
  }
  return sendCommand.apply(this, args);
};

function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

/** Resolves once `queue` holds `count` completed jobs; throws on a failed one. */
export async function drained(queue: Queue, count: number): Promise<void> {
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  for (;;) {
    const counts = await queue.getJobCounts('completed', 'failed');
    if ((counts['failed'] ?? 0) > 0) {
      const [job] = await queue.getJobs(['failed'], 0, 0);
      throw new Error(`a job failed: ${job?.failedReason ?? '?'}`);
    }
    if ((counts['completed'] ?? 0) >= count) return;
    if (Date.now() > deadline) throw new Error(`queue not drained: ${JSON.stringify(counts)}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Enqueues `jobs` at once with `enqueue(i)` (resolving with the job id), waits until `observer`
 * has them all completed (plus `warmed` from before), and reads each job's finishedOn back.
 */
export async function measure(
  jobs: number,
  observer: Queue,
  warmed: number,
  enqueue: (i: number) => Promise<string>,
  check: (job: Job) => void,
  others: Groups,
): Promise<Round> {
  const starts = new Map<string, number>();
  const ticks0 = sampleTicks(others);
  const machine0 = machineTicks();
  const elu0 = performance.eventLoopUtilization();
  const sent0 = sent;
  const idle0 = idle;
  const writes0 = ownWrites();
  const cpu0 = process.cpuUsage();
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: jobs }, async (_, i) => {
      const started = Date.now();
      starts.set(await enqueue(i), started);
    }),
  );
  await drained(observer, warmed + jobs);
  const cpu = process.cpuUsage(cpu0);
  const writes = ownWrites() - writes0;
  const sentCmds = sent - sent0;
  const ticks1 = sampleTicks(others);
  const machine1 = machineTicks();
  const elu = performance.eventLoopUtilization(elu0).utilization;

  const done = (await observer.getJobs(['completed'], 0, -1)).filter((j) => starts.has(j.id ?? ''));
  if (done.length !== jobs) throw new Error(`${done.length} of ${jobs} jobs found completed`);
  const latencies: number[] = [];
  let last = 0;
  for (const job of done) {
    check(job);
    const finished = job.finishedOn ?? NaN;
    latencies.push(finished - (starts.get(job.id ?? '') ?? NaN));
    last = Math.max(last, finished);
  }
  const wallMs = last - t0;
  const cpuUs: Record<string, number> = { node: (cpu.user + cpu.system) / jobs };
  for (const k of Object.keys(others)) {
    cpuUs[k] = (((ticks1[k] ?? 0) - (ticks0[k] ?? 0)) * TICK_US) / jobs;
  }
  return {
    throughput: (jobs / wallMs) * 1000,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    wallMs,
    cpuUs,
    sentPerJob: sentCmds / jobs,
    idlePerJob: (idle - idle0) / jobs,
    writesPerJob: writes / jobs,
    elu,
    idleShare: (machine1.idle - machine0.idle) / Math.max(1, machine1.total - machine0.total),
  };
}

/** The host: libvirt's mock hypervisor behind the real daemon, over the harness's sshd. */
export function testDriverHost(sshd: Sshd): Record<string, unknown> {
  return {
    name: 'h1',
    uri: sshd.uri('/default', {}, 'test'),
    pool: 'default-pool',
    network: 'default',
    concurrency: CONCURRENCY,
    domainType: 'qemu',
    cpuMode: 'none',
  };
}

/** A connection as BullMQ's docs make one for a Worker: none of kvm2's settings. */
/** A connection for a side's observer: its commands are not the job path's. */
export function observerConnection(): Redis {
  const conn = bareConnection();
  unmetered.add(conn);
  return conn;
}

export function bareConnection(): Redis {
  return new Redis(REDIS_URL, { maxRetriesPerRequest: null });
}
