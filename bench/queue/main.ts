// bench/queue: kvm2's full job path against bare BullMQ workers doing the same no-op, in one
// run, against the same Redis (issue #5; docs/benchmarks.md says how the target is read).
//
//   npm run bench:queue [-- --jobs 2000 --rounds 5 --warmup 6000 --concurrency 16
//                          --only kvm2|same|empty]
//
// Compiled first (tsconfig.bench.json), as the worker runs in production.
// kvm2: a worker (startWorker, in this process) serving one host on libvirt's TEST driver
// through the harness's sshd (`test+ssh://…/default`: libvirt's mock hypervisor behind the real
// daemon), fed by Kvm2Client.delete of distinct absent instances `h1/bq-<i>`. A delete of an
// absent instance is kvm2's natural no-op: validate, allocate and commit the generation, commit
// and compare it again and take the instance lock, ask libvirt (domain, pool and two volume
// lookups: nothing to delete), release the lock with the result's append, complete the job.
// same (the target's reference): a plain BullMQ Queue and Worker with the same concurrency whose
// processor does the same no-op: Provider.delete of the job's absent instance, the same four
// test-driver lookups over its own connection through the same sshd, without kvm2's queue
// logic (generations, locks, results, spans, metrics).
// empty (context): the same plain Queue and Worker whose processor returns at once.
//
// Every side: an untimed warm-up round first (its code paths compiled), then per round a fresh
// Redis prefix, its worker and producer in this process on connections of their own (kvm2's as
// kvm2 makes them, writes coalesced per event-loop turn; BullMQ's plain ioredis ones), one job
// run beforehand (connections up, scripts loaded), then `jobs` enqueued at once (every call
// issued together, one call per job: Kvm2Client.delete or Queue.add) with kvm2's retention.
// Latency of a job: its finishedOn − the instant its enqueue call began (kvm2's includes the
// producer's generation allocation), so in a burst it is mostly time spent queued. Throughput:
// jobs over (last finishedOn − first enqueue call). The order of the sides rotates between
// rounds; figures are medians. Each round also reports the CPU each process on the path spent
// per job (this process, redis-server, the sshd sessions, libvirtd; the last three are shared
// with anything else running), the Redis commands this process sent and its write syscalls.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Kvm2Client } from '../../queues/client.js';
import { DEFAULT_JOB_OPTIONS } from '../../queues/job-options.js';
import { hostQueueName } from '../../queues/names.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { Provider } from '../../src/provider/provider.js';
import { redisScope, REDIS_URL } from '../../test/harness/redis.js';
import { startSshd, type Sshd } from '../../test/harness/sshd.js';
import type { JobReturn } from '../../workers/runner.js';
import { startWorker } from '../../workers/runtime.js';
import { median } from '../lib/virsh-ssh.js';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const JOBS = arg('jobs', 2000);
const ROUNDS = arg('rounds', 5);
/**
 * Jobs of an untimed round per side before the timed ones: every side's code paths compiled.
 * With one round's worth, kvm2's first timed round still ran 10–20% below its later ones.
 */
const WARMUP = arg('warmup', 3 * JOBS);
const CONCURRENCY = arg('concurrency', 16);
const onlyAt = process.argv.indexOf('--only');
/** One side alone (for profiling): kvm2, same or empty. */
const ONLY = onlyAt >= 0 ? process.argv[onlyAt + 1] : undefined;
const TARGET = 0.7;
const QUEUE = hostQueueName('h1');
const POLL_MS = 20;
const DRAIN_TIMEOUT_MS = 300_000;
/** kvm2's retention for deletes: every side keeps (and trims) finished jobs alike. */
const { attempts: _attempts, backoff: _backoff, ...RETENTION } = DEFAULT_JOB_OPTIONS.delete;

interface Round {
  /** jobs/s */
  readonly throughput: number;
  readonly p50: number;
  readonly p99: number;
  readonly wallMs: number;
  /** CPU per job, µs: `node` is this process (producer and worker), then the others. */
  readonly cpuUs: Readonly<Record<string, number>>;
  /** Commands this process sent to Redis, per job (each its own write unless pipelined). */
  readonly sentPerJob: number;
  /** This process's write syscalls per job (Redis commands, SSH packets). */
  readonly writesPerJob: number;
}

// Every command this process sends, whichever connection: what the job path costs in requests.
let sent = 0;
// eslint-disable-next-line @typescript-eslint/unbound-method -- re-bound by apply() below
const sendCommand = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
  sent++;
  return sendCommand.apply(this, args);
};

function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

// ---- CPU of the processes on the path, from /proc (clock ticks of 10 ms) --------------------

const TICK_US = 1e6 / 100;

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly comm: string;
  readonly ticks: number;
}

function procs(): Proc[] {
  const found: Proc[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid …; comm may hold spaces and parentheses.
    const close = stat.lastIndexOf(')');
    const f = stat.slice(close + 2).split(' ');
    found.push({
      pid: Number(name),
      ppid: Number(f[1]),
      comm: stat.slice(stat.indexOf('(') + 1, close),
      ticks: Number(f[11]) + Number(f[12]), // utime + stime
    });
  }
  return found;
}

/** Processes by group name: each picks its own from the process table. */
type Groups = Readonly<Record<string, (table: readonly Proc[]) => readonly Proc[]>>;

function sampleTicks(groups: Groups): Record<string, number> {
  const table = procs();
  return Object.fromEntries(
    Object.entries(groups).map(([name, select]) => [
      name,
      select(table).reduce((sum, p) => sum + p.ticks, 0),
    ]),
  );
}

function byComm(comm: string): (table: readonly Proc[]) => Proc[] {
  return (table) => table.filter((p) => p.comm === comm);
}

/** The harness sshd's sessions (its descendants; the listener itself idles). */
function sessionsOf(sshd: Sshd): (table: readonly Proc[]) => Proc[] {
  const root = Number(fs.readFileSync(path.join(sshd.dir, 'sshd.pid'), 'utf8').trim());
  return (table) => {
    const out: Proc[] = [];
    const queue = [root];
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      for (const p of table) {
        if (p.ppid !== next) continue;
        out.push(p);
        queue.push(p.pid);
      }
    }
    return out;
  };
}

function ownWrites(): number {
  const io = fs.readFileSync('/proc/self/io', 'utf8');
  return Number(/syscw: (\d+)/.exec(io)?.[1] ?? NaN);
}

async function redisVersion(): Promise<string> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
  } finally {
    redis.disconnect();
  }
}

// ---- one timed burst ------------------------------------------------------------------------

/** Resolves once `queue` holds `count` completed jobs; throws on a failed one. */
async function drained(queue: Queue, count: number): Promise<void> {
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
async function measure(
  jobs: number,
  observer: Queue,
  warmed: number,
  enqueue: (i: number) => Promise<string>,
  check: (job: Job) => void,
  others: Groups,
): Promise<Round> {
  const starts = new Map<string, number>();
  const ticks0 = sampleTicks(others);
  const sent0 = sent;
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
    writesPerJob: writes / jobs,
  };
}

// ---- the three sides ------------------------------------------------------------------------

/** The host: libvirt's mock hypervisor behind the real daemon, over the harness's sshd. */
function testDriverHost(sshd: Sshd): Record<string, unknown> {
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

async function kvm2Round(jobs: number, sshd: Sshd): Promise<Round> {
  const scope = await redisScope('bq-kvm2');
  const config = parseConfig({
    redis: { url: REDIS_URL, prefix: scope.prefix },
    hosts: [testDriverHost(sshd)],
    // One health check at start, then hourly: none runs inside the timed burst.
    health: { every: '1h' },
  });
  const logger = pino({ level: 'warn' }, pino.destination(2));
  const runtime = await startWorker(config, { logger });
  const client = new Kvm2Client({ redisUrl: REDIS_URL, prefix: scope.prefix });
  const observerConn = bareConnection();
  const observer = new Queue(QUEUE, { connection: observerConn, prefix: scope.prefix });
  try {
    // Warm: the worker's SSH connection to libvirtd is up, BullMQ's and kvm2's scripts loaded.
    const warm = await client.delete('h1/bq-warm');
    await client.waitFor(warm.jobId, { timeoutMs: 30_000 });
    return await measure(
      jobs,
      observer,
      1,
      async (i) => (await client.delete(`h1/bq-${i}`)).jobId,
      (job) => {
        const result = job.returnvalue as JobReturn | undefined;
        if (result?.outcome !== 'succeeded' || result.state !== 'deleted') {
          throw new Error(`kvm2 job ${job.id}: ${JSON.stringify(result)}`);
        }
      },
      { redis: byComm('redis-server'), sshd: sessionsOf(sshd), libvirtd: byComm('libvirtd') },
    );
  } finally {
    await client.close();
    await runtime.close();
    await observer.close();
    observerConn.disconnect();
    await scope.cleanup();
  }
}

/** A connection as BullMQ's docs make one for a Worker: none of kvm2's settings. */
function bareConnection(): Redis {
  return new Redis(REDIS_URL, { maxRetriesPerRequest: null });
}

/** Bare BullMQ; with `sshd`, each job makes kvm2's libvirt calls for its instance. */
async function bareRound(jobs: number, sshd?: Sshd): Promise<Round> {
  const scope = await redisScope(sshd === undefined ? 'bq-bare' : 'bq-libvirt');
  const provider =
    sshd === undefined ? undefined : new Provider(parseConfig({ hosts: [testDriverHost(sshd)] }));
  const producerConn = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const workerConn = bareConnection();
  const observerConn = bareConnection();
  const queue = new Queue(QUEUE, { connection: producerConn, prefix: scope.prefix });
  const observer = new Queue(QUEUE, { connection: observerConn, prefix: scope.prefix });
  const worker = new Worker(
    QUEUE,
    async (job: Job<{ id: string }>) => {
      await provider?.delete(job.data.id);
      return 'done';
    },
    { connection: workerConn, prefix: scope.prefix, concurrency: CONCURRENCY },
  );
  worker.on('error', (err) => console.error(`bare worker: ${err.message}`));
  try {
    await worker.waitUntilReady();
    await queue.add('delete', { id: 'h1/bq-warm' }, RETENTION);
    await drained(observer, 1);
    return await measure(
      jobs,
      observer,
      1,
      async (i) => (await queue.add('delete', { id: `h1/bq-${i}` }, RETENTION)).id ?? '',
      (job) => {
        if (job.returnvalue !== 'done') throw new Error(`bare job ${job.id}: ${job.returnvalue}`);
      },
      sshd === undefined
        ? { redis: byComm('redis-server') }
        : { redis: byComm('redis-server'), sshd: sessionsOf(sshd), libvirtd: byComm('libvirtd') },
    );
  } finally {
    await worker.close();
    await queue.close();
    await observer.close();
    await provider?.close();
    producerConn.disconnect();
    workerConn.disconnect();
    observerConn.disconnect();
    await scope.cleanup();
  }
}

// ---- report ---------------------------------------------------------------------------------

const SIDES = [
  { key: 'empty', label: 'BullMQ empty' },
  { key: 'same', label: 'BullMQ same' },
  { key: 'kvm2', label: 'kvm2' },
] as const;
type SideKey = (typeof SIDES)[number]['key'];

function show(label: string, r: Round): string {
  const cpu = Object.entries(r.cpuUs)
    .map(([k, v]) => `${k} ${v.toFixed(0)}`)
    .join(', ');
  return (
    `${label.padEnd(13)} ${r.throughput.toFixed(0).padStart(5)} jobs/s   ` +
    `p50 ${r.p50.toFixed(0).padStart(5)} ms   p99 ${r.p99.toFixed(0).padStart(5)} ms   ` +
    `wall ${r.wallMs.toFixed(0).padStart(5)} ms\n${''.padStart(23)}` +
    `per job: cpu µs ${cpu}; redis commands sent ${r.sentPerJob.toFixed(1)}; ` +
    `writes ${r.writesPerJob.toFixed(1)}`
  );
}

function medianRound(rounds: readonly Round[]): Round {
  const m = (f: (r: Round) => number): number => median(rounds.map(f));
  return {
    throughput: m((r) => r.throughput),
    p50: m((r) => r.p50),
    p99: m((r) => r.p99),
    wallMs: m((r) => r.wallMs),
    cpuUs: Object.fromEntries(
      Object.keys(rounds[0]?.cpuUs ?? {}).map((k) => [k, m((r) => r.cpuUs[k] ?? NaN)]),
    ),
    sentPerJob: m((r) => r.sentPerJob),
    writesPerJob: m((r) => r.writesPerJob),
  };
}

function load(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

async function main(): Promise<void> {
  const version = await redisVersion();
  const sshd = await startSshd();
  console.log(
    `bench/queue: ${JOBS} jobs, concurrency ${CONCURRENCY}, median of ${ROUNDS} rounds; ` +
      `${os.cpus().length} cores, load ${load()}; redis ${version}; ` +
      `libvirt test driver over ssh to 127.0.0.1:${sshd.port}`,
  );
  const runs: Record<SideKey, (jobs: number) => Promise<Round>> = {
    empty: (jobs) => bareRound(jobs),
    same: (jobs) => bareRound(jobs, sshd),
    kvm2: (jobs) => kvm2Round(jobs, sshd),
  };
  const results: Record<SideKey, Round[]> = { empty: [], same: [], kvm2: [] };
  const sides = SIDES.filter((s) => ONLY === undefined || s.key === ONLY);
  try {
    for (const side of sides) await runs[side.key](WARMUP);
    for (let i = 0; i < ROUNDS; i++) {
      // Rotate the order, so no side always runs first (or right after the same one).
      const order = sides.map((_, k) => sides[(k + i) % sides.length]);
      for (const side of order) {
        if (side === undefined) continue;
        const r = await runs[side.key](JOBS);
        results[side.key].push(r);
        console.log(`round ${i + 1}  ${show(side.label, r)}`);
      }
    }
  } finally {
    await sshd.stop();
  }
  if (ONLY !== undefined) return;

  const e = medianRound(results.empty);
  const b = medianRound(results.same);
  const k = medianRound(results.kvm2);
  const perRound = results.kvm2.map((r, i) => r.throughput / (results.same[i]?.throughput ?? NaN));
  console.log(`\n== summary (medians; load ${load()})`);
  console.log(show('BullMQ empty', e));
  console.log(show('BullMQ same', b));
  console.log(show('kvm2', k));
  console.log(
    `latency (burst of ${JOBS}, enqueue → finished): kvm2 p50 ${k.p50.toFixed(0)} ms, ` +
      `p99 ${k.p99.toFixed(0)} ms; BullMQ same p50 ${b.p50.toFixed(0)} ms, p99 ` +
      `${b.p99.toFixed(0)} ms; BullMQ empty p50 ${e.p50.toFixed(0)} ms, p99 ${e.p99.toFixed(0)} ms`,
  );
  console.log(
    `context: the no-op's four test-driver lookups over SSH cost bare BullMQ itself ` +
      `${b.throughput.toFixed(0)} vs ${e.throughput.toFixed(0)} jobs/s = ` +
      `${(b.throughput / e.throughput).toFixed(2)}× of an empty processor; kvm2 = ` +
      `${(k.throughput / e.throughput).toFixed(2)}× of it`,
  );
  // The cores are saturated on both sides, so throughput follows the CPU a job costs all the
  // processes on its path: a second reading of the ratio, less moved by a noisy neighbour.
  const total = (r: Round): number => Object.values(r.cpuUs).reduce((x, y) => x + y, 0);
  console.log(
    `cpu per job, every process on the path: kvm2 ${total(k).toFixed(0)} µs vs BullMQ same ` +
      `${total(b).toFixed(0)} µs: same ÷ kvm2 = ${(total(b) / total(k)).toFixed(2)}`,
  );
  const ratio = k.throughput / b.throughput;
  console.log(
    `queue: kvm2 ${k.throughput.toFixed(0)} jobs/s vs bare BullMQ doing the same no-op ` +
      `${b.throughput.toFixed(0)} jobs/s = ${ratio.toFixed(2)}× (per round: ` +
      `${perRound.map((x) => x.toFixed(2)).join(', ')}; target ≥ ${TARGET}: ` +
      `${ratio >= TARGET ? 'met' : 'MISSED'})`,
  );
}

await main();
