// bench/queue: kvm2's full job path against bare BullMQ workers doing the same no-op, in one
// run, against the same Redis (issue #5; docs/benchmarks.md says how the target is read).
//
//   npm run bench:queue [-- --jobs 2000 --rounds 5 --warmup 6000 --concurrency 16
//                          --only kvm2|same|empty --stub-provider]
//
// Compiled first (tsconfig.bench.json), as the worker runs in production.
// kvm2: a worker (startWorker, in this process) serving one host on libvirt's TEST driver
// through the harness's sshd (`test+ssh://…/default`: libvirt's mock hypervisor behind the real
// daemon), fed by Kvm2Client.delete of distinct absent instances `h1/bq-<i>`. A delete of an
// absent instance is kvm2's natural no-op: validate, allocate and commit the generation, commit
// and compare it again and take the instance lock (in the completion that fetched the job, or a
// begin of its own), ask libvirt (domain, pool and two volume lookups: nothing to delete),
// release the lock, append the result and complete the job (one script, which also fetches and
// begins the next).
// same (the target's reference): a plain BullMQ Queue and Worker with the same concurrency whose
// processor does the same no-op: Provider.delete of the job's absent instance, the same four
// test-driver lookups over its own connection through the same sshd, without kvm2's queue
// logic (generations, locks, results, spans, metrics).
// empty (context): the same plain Queue and Worker whose processor returns at once.
// --stub-provider (analysis only): Provider.delete returns at once on the kvm2 and same sides,
// so that what is left is the queue path alone (kvm2's scripts and its run's JS against
// BullMQ's own); the summary then reads no target. Below 10,000 jobs a round: kvm2's
// retention keeps that many completed jobs, and a round counts them to see it drained.
//
// Every side: an untimed warm-up round first (its code paths compiled), then per round a fresh
// Redis prefix, its worker and producer in this process on connections of their own (kvm2's as
// kvm2 makes them, the producer's writes coalesced per event-loop turn; BullMQ's plain ioredis
// ones), one job run beforehand (connections up, scripts loaded), then `jobs` enqueued at once
// (every call issued together, one call per job: Kvm2Client.delete or Queue.add) with kvm2's
// retention.
// Latency of a job: its finishedOn − the instant its enqueue call began (kvm2's includes the
// producer's generation allocation), so in a burst it is mostly time spent queued. Throughput:
// jobs over (last finishedOn − first enqueue call). The order of the sides rotates between
// rounds; figures are medians. Each round also reports the CPU each process on the path spent
// per job (this process, redis-server, the sshd sessions, libvirtd; the last three are shared
// with anything else running), the Redis commands this process sent and its write syscalls.
//
// The parts: args.ts (the command line), round.ts (one timed burst and what every side
// shares), proc-cpu.ts (the CPU of the processes on the path), kvm2.ts and reference.ts (the
// sides), report.ts (the lines printed).
import os from 'node:os';
import { Redis } from 'ioredis';
import { REDIS_URL } from '../../test/harness/redis.js';
import { startSshd } from '../../test/harness/sshd.js';
import { CONCURRENCY, JOBS, ONLY, ROUNDS, STUB_PROVIDER, WARMUP } from './args.js';
import { Provider } from '../../src/provider/provider.js';
import { kvm2Round } from './kvm2.js';
import { bareRound } from './reference.js';
import { load, printSummary, show, SIDES, type SideKey } from './report.js';
import type { Round } from './round.js';

async function redisVersion(): Promise<string> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
  } finally {
    redis.disconnect();
  }
}

async function main(): Promise<void> {
  const version = await redisVersion();
  const sshd = await startSshd();
  if (STUB_PROVIDER) {
    // Every side's deletes, kvm2's worker's and the same side's processor's, go through it.
    Provider.prototype.delete = async (): Promise<void> => {};
    console.log(
      '--stub-provider: Provider.delete returns at once; the queue path alone, no target read',
    );
  }
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
  printSummary(results, { stubbed: STUB_PROVIDER });
}

await main();
