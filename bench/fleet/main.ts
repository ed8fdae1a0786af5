// bench/fleet: how kvm2's throughput and Redis connections grow with the fleet (issue #15;
// docs/scaling.md reads the figures).
//
//   npm run bench:fleet [-- --jobs 2000 --sizes 1,2,4,8 --concurrency 8]
//
// For each fleet size N: N hosts, each its own libvirtd in a namespace of its own with its own
// sshd (test/harness/ns-host.ts), served through libvirt's TEST driver
// (`test+ssh://…/default`: the mock hypervisor behind the real daemon, so what is measured is
// kvm2, BullMQ, Redis, SSH and libvirtd, not qemu). One worker (startWorker, in this process)
// serves all N with the same per-host concurrency. `jobs` deletes of distinct absent instances
// (kvm2's natural no-op: generation, lock, four libvirt lookups, result) are enqueued at once,
// spread evenly over the hosts; throughput = jobs over (last final result − first enqueue).
// Then the same with host h1's sshd stopped: the jobs go to the N−1 hosts that are up, plus
// jobs/N to h1 (they retry, untimed), and the up hosts' throughput is measured.
//
// An untimed round on one host first compiles the code paths. Printed per size: jobs/s, the
// ratio to 1 host, CPU per job of this process (producer and
// worker), redis-server, the sshd sessions and the libvirtds (so the ratio is read against what
// the machine's 2 cores can give), and the Redis connections the worker process holds and
// Redis holds in all.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Kvm2Client } from '../../queues/client.js';
import { resultsKey } from '../../queues/names.js';
import { FINAL_OUTCOMES, parseResult } from '../../queues/results.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { startNamespaceHosts, type NamespaceHost } from '../../test/harness/ns-host.js';
import { redisScope, REDIS_URL } from '../../test/harness/redis.js';
import { startWorker } from '../../workers/runtime.js';
import { byComm, sampleTicks, sessionsOf, TICK_US, type Groups } from '../queue/proc-cpu.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '2000' },
    sizes: { type: 'string', default: '1,2,4,8' },
    concurrency: { type: 'string', default: '8' },
  },
});
const JOBS = Number(values.jobs);
const SIZES = values.sizes.split(',').map(Number);
const CONCURRENCY = Number(values.concurrency);
for (const [name, n] of [
  ['jobs', JOBS],
  ['concurrency', CONCURRENCY],
  ...SIZES.map((s) => ['sizes', s] as const),
] as const) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: whole numbers ≥ 1, got ${n}`);
}

interface Figures {
  readonly throughput: number;
  readonly cpuUs: Readonly<Record<string, number>>;
  readonly workerConnections: number;
  readonly redisConnections: number;
}

async function clientCount(redis: Redis): Promise<number> {
  return Number(/connected_clients:(\d+)/.exec(await redis.info('clients'))?.[1] ?? NaN);
}

/** Resolves once the stream holds a final result for every job in `jobs`; the last one's time. */
async function finals(redis: Redis, prefix: string, jobs: ReadonlySet<string>): Promise<number> {
  const pending = new Set(jobs);
  let cursor = '0-0';
  let last = 0;
  const deadline = Date.now() + 600_000;
  while (pending.size > 0) {
    if (Date.now() > deadline) throw new Error(`${pending.size} jobs without a final result`);
    const reply = await redis.xread(
      'COUNT',
      1000,
      'BLOCK',
      1000,
      'STREAMS',
      resultsKey(prefix),
      cursor,
    );
    for (const [id, fields] of reply?.[0]?.[1] ?? []) {
      cursor = id;
      const r = parseResult(id, fields);
      if (r === undefined || !pending.has(r.jobId) || !FINAL_OUTCOMES.has(r.outcome)) continue;
      if (r.outcome !== 'succeeded')
        throw new Error(`job ${r.jobId}: ${r.outcome} ${r.message ?? ''}`);
      pending.delete(r.jobId);
      last = Math.max(last, r.timestamp);
    }
  }
  return last;
}

async function round(
  hosts: readonly NamespaceHost[],
  down: NamespaceHost | undefined,
): Promise<Figures> {
  const scope = await redisScope('bench-fleet');
  const reader = new Redis(REDIS_URL);
  const config = parseConfig({
    redis: { url: REDIS_URL, prefix: scope.prefix },
    hosts: hosts.map((h) => ({
      name: h.name,
      uri: h.sshd.uri('/default', { socket: h.socket }, 'test'),
      pool: 'default-pool',
      network: 'default',
      concurrency: CONCURRENCY,
      domainType: 'qemu',
      cpuMode: 'none',
    })),
    health: { every: '1h' },
    events: { watch: false },
  });
  const before = await clientCount(reader);
  const runtime = await startWorker(config, {
    logger: pino({ level: 'error' }, pino.destination(2)),
  });
  const workerConnections = (await clientCount(reader)) - before;
  const client = new Kvm2Client({ redisUrl: REDIS_URL, prefix: scope.prefix });
  try {
    // Warm: each host's SSH connection up, the scripts loaded.
    const warm = await Promise.all(
      hosts.filter((h) => h !== down).map((h) => client.delete(`${h.name}/bf-warm`)),
    );
    await finals(reader, scope.prefix, new Set(warm.map((w) => w.jobId)));
    if (down !== undefined) await down.sshd.down();
    const up = hosts.filter((h) => h !== down);
    const groups: Groups = {
      redis: byComm('redis-server'),
      sshd: (table) => hosts.flatMap((h) => (h === down ? [] : sessionsOf(h.sshd)(table))),
      libvirtd: byComm('libvirtd'),
    };
    const ticks0 = sampleTicks(groups);
    const cpu0 = process.cpuUsage();
    const t0 = Date.now();
    const timed = await Promise.all(
      Array.from(
        { length: JOBS },
        async (_, i) => (await client.delete(`${up[i % up.length]?.name}/bf-${i}`)).jobId,
      ),
    );
    if (down !== undefined) {
      // Work for the host that is down, queued with the rest (not timed: it waits for the host).
      await Promise.all(
        Array.from({ length: Math.ceil(JOBS / hosts.length) }, (_, i) =>
          client.delete(`${down.name}/bf-${i}`),
        ),
      );
    }
    const last = await finals(reader, scope.prefix, new Set(timed));
    const cpu = process.cpuUsage(cpu0);
    const ticks1 = sampleTicks(groups);
    const cpuUs: Record<string, number> = { node: (cpu.user + cpu.system) / JOBS };
    for (const k of Object.keys(groups))
      cpuUs[k] = (((ticks1[k] ?? 0) - (ticks0[k] ?? 0)) * TICK_US) / JOBS;
    return {
      throughput: (JOBS / (last - t0)) * 1000,
      cpuUs,
      workerConnections,
      redisConnections: await clientCount(reader),
    };
  } finally {
    await client.close();
    await runtime.close();
    if (down !== undefined) await down.sshd.up();
    reader.disconnect();
    await scope.cleanup();
  }
}

function line(label: string, f: Figures, base: number | undefined): string {
  const cpu = Object.entries(f.cpuUs)
    .map(([k, v]) => `${k} ${Math.round(v)}`)
    .join(', ');
  const total = Object.values(f.cpuUs).reduce((a, b) => a + b, 0);
  const ratio = base === undefined ? '' : ` (${(f.throughput / base).toFixed(2)}× 1 host)`;
  // What the machine's cores could give at this CPU per job, if nothing else ran.
  const ceiling = (os.cpus().length * 1e6) / total;
  return `${label.padEnd(22)} ${f.throughput.toFixed(0).padStart(6)} jobs/s${ratio}; CPU/job ${Math.round(total)} µs (${cpu}), the cores' ceiling at that ${ceiling.toFixed(0)} jobs/s; redis connections: worker process ${f.workerConnections}, redis ${f.redisConnections}`;
}

async function main(): Promise<void> {
  console.log(
    `bench/fleet: ${JOBS} jobs, concurrency ${CONCURRENCY} per host, fleets of ${SIZES.join(', ')} test-driver hosts; ${os.cpus().length} cores`,
  );
  const all = await startNamespaceHosts(Math.max(...SIZES), 'bf');
  let base: number | undefined;
  try {
    // Untimed: the code paths compiled before anything is measured.
    await round(all.slice(0, 1), undefined);
    for (const n of SIZES) {
      const hosts = all.slice(0, n);
      const f = await round(hosts, undefined);
      base ??= f.throughput;
      console.log(line(`${n} host${n === 1 ? '' : 's'}`, f, base));
      if (n >= 2) {
        const d = await round(hosts, hosts[0]);
        console.log(line(`${n} hosts, h1 down`, d, base));
      }
    }
  } finally {
    await Promise.all(all.map((h) => h.stop()));
  }
}

await main();
