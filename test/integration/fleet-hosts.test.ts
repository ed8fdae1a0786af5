// Several real libvirt hosts (issue #15): three libvirtds of their own (qemu driver, each in
// its own mount and PID namespace with its own pool, network and domains: harness/ns-host.ts),
// each reached through its own sshd, served by real `kvm2 worker` processes.
//   - one worker process serves all three: each instance is made on its own host and nowhere
//     else (virsh on every host and on the machine's own libvirtd);
//   - placement by zone: h1 and h2 are zone `za`, h3 is `zb`;
//   - GC across hosts: one gc job deletes the tag's instances not kept on every host and the
//     orphan volumes on each;
//   - h2's sshd down: only h2's jobs wait; h1's and h3's keep their pace (measured in
//     interleaved rounds, h2 down with its jobs queued against h2 up and idle); zone
//     placement stops choosing h2; the host comes back and its jobs finish;
//   - two worker processes share the hosts: both run jobs, and each host's concurrency holds
//     across both (the `job run` lines of both processes).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { hostQueueName } from '../../queues/names.js';
import type { ResultEntry } from '../../queues/results.js';
import { readHealth } from '../../queues/health.js';
import { startHostFleet, type HostFleet } from '../harness/host-fleet.js';
import { drained, jobRuns, maxOverlap } from '../harness/job-runs.js';
import { cpuMs } from '../harness/proc-tree.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { virsh } from '../harness/virsh.js';
import { waitUntil } from '../harness/fault-kit.js';

const HOSTS = {
  h1: { zone: 'za', concurrency: 2, firmware: 'bios' },
  h2: { zone: 'za', concurrency: 2, firmware: 'bios' },
  h3: { zone: 'zb', concurrency: 1, firmware: 'bios' },
} as const;
type HostName = keyof typeof HOSTS;
const NAMES = Object.keys(HOSTS) as HostName[];
const TIMEOUT_MS = 180_000;
const run = promisify(execFile);

let fleet: HostFleet;
let client: Kvm2Client;
let configPath: string;
const workers: WorkerProcess[] = [];

function report(line: string): void {
  process.stdout.write(`[fleet-hosts] ${line}\n`);
}

beforeAll(async () => {
  fleet = await startHostFleet('fh', NAMES.length, HOSTS);
  configPath = fleet.writeConfig();
  workers.push(await startWorkerProcess(configPath, { readyTimeoutMs: 120_000 }));
  client = fleet.client();
  // Zone placement reads the health reports: wait for the first round on every host.
  await until('every host reported healthy', async () => {
    const reports = await readHealth(fleet.scope.redis, fleet.scope.prefix);
    return NAMES.every((h) => reports.get(h)?.status === 'healthy');
  });
}, 300_000);

const until = (what: string, check: () => Promise<boolean>): Promise<void> =>
  waitUntil(check, 60_000, what);

afterAll(async () => {
  await client?.close();
  await Promise.all(workers.map((w) => w.stop()));
  await fleet?.cleanup();
}, 180_000);

let serial = 0;
const fresh = (what: string): string => `${what}${++serial}`;

async function create(
  where: { host: HostName } | { zone: string },
  name: string,
  tag = 'fh',
): Promise<{ jobId: string; id: string }> {
  return client.create(
    { ...where, name, image: fleet.image, tag, userData: '#cloud-config\n' },
    { wait: false },
  );
}

async function settle(jobs: readonly { jobId: string }[]): Promise<ResultEntry[]> {
  return Promise.all(jobs.map((j) => client.waitFor(j.jobId, { timeoutMs: TIMEOUT_MS })));
}

async function deleteAll(ids: readonly string[]): Promise<void> {
  const results = await settle(await Promise.all(ids.map((id) => client.delete(id))));
  expect(results.map((r) => r.outcome)).toEqual(ids.map(() => 'succeeded'));
}

/** Each host's domains, and the machine's own libvirtd's domains among `names`. */
async function whereAre(names: readonly string[]): Promise<Record<string, string[]>> {
  const seen: Record<string, string[]> = {};
  for (const h of fleet.hosts) {
    seen[h.name] = (await h.domains()).filter((d) => names.includes(d)).sort();
  }
  const machine = (await virsh(['list', '--all', '--name'])).split('\n').map((s) => s.trim());
  seen['machine'] = machine.filter((d) => names.includes(d));
  return seen;
}

describe('one worker process serving three hosts', () => {
  it('makes each instance on its own host and nowhere else', async () => {
    const planned = NAMES.flatMap((host) => [0, 1].map(() => ({ host, name: fresh(host) })));
    const jobs = await Promise.all(planned.map((p) => create({ host: p.host }, p.name)));
    const results = await settle(jobs);
    expect(results.map((r) => r.outcome)).toEqual(jobs.map(() => 'succeeded'));
    const names = planned.map((p) => p.name);
    expect(await whereAre(names)).toEqual({
      ...Object.fromEntries(
        NAMES.map((h) => [
          h,
          planned
            .filter((p) => p.host === h)
            .map((p) => p.name)
            .sort(),
        ]),
      ),
      machine: [],
    });
    await deleteAll(jobs.map((j) => j.id));
    expect(await whereAre(names)).toEqual({ h1: [], h2: [], h3: [], machine: [] });
  }, 300_000);

  it('places zone requests on the zone’s hosts only', async () => {
    const za = await Promise.all([0, 1, 2, 3].map(() => create({ zone: 'za' }, fresh('za'))));
    const zb = await Promise.all([0, 1].map(() => create({ zone: 'zb' }, fresh('zb'))));
    const placed = [...za, ...zb].map((j) => j.id.split('/')[0]);
    report(`zone za → ${placed.slice(0, 4).join(' ')}; zone zb → ${placed.slice(4).join(' ')}`);
    expect(placed.slice(0, 4).every((h) => h === 'h1' || h === 'h2')).toBe(true);
    expect(placed.slice(4)).toEqual(['h3', 'h3']);
    const results = await settle([...za, ...zb]);
    expect(results.map((r) => r.outcome)).toEqual(placed.map(() => 'succeeded'));
    for (const j of [...za, ...zb]) {
      const [host = '', name = ''] = j.id.split('/');
      expect(await fleet.host(host).domains()).toContain(name);
    }
    await deleteAll([...za, ...zb].map((j) => j.id));
  }, 300_000);

  it('GC deletes the tag’s instances not kept on every host, and each host’s orphan volumes', async () => {
    const planned = NAMES.flatMap((host) => [0, 1].map(() => ({ host, name: fresh('gc') })));
    const jobs = await Promise.all(planned.map((p) => create({ host: p.host }, p.name, 'fgc')));
    expect((await settle(jobs)).every((r) => r.outcome === 'succeeded')).toBe(true);
    // A leftover overlay on h2 and h3 whose domain is gone (a crash between steps, say).
    const orphans = { h2: `kvm2-${fresh('orphan')}.qcow2`, h3: `kvm2-${fresh('orphan')}.qcow2` };
    for (const [host, vol] of Object.entries(orphans)) {
      await fleet.host(host).virsh(['vol-create-as', 'default', vol, '1M', '--format', 'qcow2']);
    }
    const kept = jobs[0]?.id ?? '';
    await new Promise((r) => setTimeout(r, 50)); // everything is older than the 10 ms grace
    const gc = await client.gc({ tag: 'fgc', keep: [kept], graceMs: 10 });
    const gcResult = await client.waitFor(gc.jobId, { timeoutMs: TIMEOUT_MS });
    expect(gcResult.outcome).toBe('succeeded');
    report(`gc: ${gcResult.message ?? ''}`);
    // The deletes it enqueued run on each host's queue.
    const deadline = Date.now() + TIMEOUT_MS;
    const names = planned.map((p) => p.name);
    const keptName = kept.split('/')[1] ?? '';
    const want = { h1: [keptName], h2: [], h3: [], machine: [] };
    while (Date.now() < deadline) {
      if (JSON.stringify(await whereAre(names)) === JSON.stringify(want)) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(await whereAre(names)).toEqual(want);
    for (const [host, vol] of Object.entries(orphans)) {
      expect(await fleet.host(host).volumes()).not.toContain(vol);
    }
    await deleteAll([kept]);
  }, 300_000);
});

/** How many qemu processes run on the machine (every host's guests are the machine's). */
async function qemuCount(): Promise<number> {
  const { stdout } = await run('pgrep', ['-c', '-f', '^/usr/bin/qemu-system']).catch(
    (err: { stdout?: string }) => ({ stdout: err.stdout ?? '0' }),
  );
  return Number(stdout.trim());
}

let qemuBefore = 0;

/** Waits (up to 20 s) until the guests deleted have exited: qemu under TCG takes a while. */
async function quiet(): Promise<void> {
  const deadline = Date.now() + 20_000;
  while ((await qemuCount()) > qemuBefore && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The median of a few numbers. */
function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? 0)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

describe('a host whose sshd is down', () => {
  const PER_HOST = 4;
  const PAIRS = 5;

  /**
   * One round: PER_HOST creates on h1 and on h3 at once; the mean time from the round's start
   * to each of their results. With `h2Down`, h2's sshd is stopped first, PER_HOST creates for h2 are enqueued with
   * the others (and retry against the closed port), and once h1's and h3's results are in h2's
   * sshd is started again and h2's creates must finish too. Without, h2 has no jobs: the
   * baseline is the other hosts' pace with h2 idle, so what differs is only h2 being down
   * with work queued for it. Everything is deleted after.
   */
  async function round(h2Down: boolean): Promise<{ ms: number; cpu: number; h2: ResultEntry[] }> {
    const h2 = fleet.host('h2');
    if (h2Down) await h2.sshd.down();
    const worker = workers[0]?.pid ?? 0;
    const cpuBefore = await cpuMs(worker);
    const started = performance.now();
    const planned = NAMES.filter((host) => h2Down || host !== 'h2').flatMap((host) =>
      Array.from({ length: PER_HOST }, () => ({ host, name: fresh(`sd${host}`) })),
    );
    const jobs = await Promise.all(planned.map((p) => create({ host: p.host }, p.name)));
    const others = jobs.filter((_, i) => planned[i]?.host !== 'h2');
    const mine = jobs.filter((_, i) => planned[i]?.host === 'h2');
    // Each job's time from the round's start to its result; their mean is the round's figure
    // (steadier than the last one alone).
    const took: number[] = [];
    const otherResults = await Promise.all(
      others.map(async (j) => {
        const result = await client.waitFor(j.jobId, { timeoutMs: TIMEOUT_MS });
        took.push(performance.now() - started);
        return result;
      }),
    );
    const ms = took.reduce((a, b) => a + b, 0) / took.length;
    const cpu = (await cpuMs(worker)) - cpuBefore;
    expect(otherResults.map((r) => r.outcome)).toEqual(others.map(() => 'succeeded'));
    if (h2Down) await h2.sshd.up();
    const h2Results = await settle(mine);
    expect(h2Results.map((r) => r.outcome)).toEqual(mine.map(() => 'succeeded'));
    await deleteAll(jobs.map((j) => j.id));
    await quiet();
    return { ms, cpu, h2: h2Results };
  }

  it('delays only its own jobs: the other hosts keep their pace, and its jobs finish once it is back', async () => {
    qemuBefore = await qemuCount();
    const pairs: { up: number; down: number }[] = [];
    const cpu = { up: [] as number[], down: [] as number[] };
    let retriedH2 = 0;
    let mostAttempts = 0;
    for (let i = 0; i < PAIRS; i++) {
      // Each pair side by side, the order alternating, so a drift in the machine's load
      // cancels out of the pair's ratio.
      const pair = { up: 0, down: 0 };
      for (const h2Down of i % 2 === 0 ? [false, true] : [true, false]) {
        const { ms, cpu: used, h2 } = await round(h2Down);
        pair[h2Down ? 'down' : 'up'] = ms;
        cpu[h2Down ? 'down' : 'up'].push(used);
        if (h2Down) retriedH2 += h2.filter((r) => r.attempt > 1).length;
        for (const r of h2) mostAttempts = Math.max(mostAttempts, r.attempt);
      }
      pairs.push(pair);
    }
    const ratio = median(pairs.map((p) => p.down / p.up));
    const ms = (xs: number[]): string => xs.map(Math.round).join('/');
    report(
      `h1+h3 ${2 * PER_HOST} creates, mean time to a result, ${PAIRS} pairs: h2 up and idle ${ms(pairs.map((p) => p.up))} ms, h2's sshd down with ${PER_HOST} creates queued for it ${ms(pairs.map((p) => p.down))} ms; median of the pairs' ratios ${ratio.toFixed(3)}× (target at most 1.10×: ${ratio <= 1.1 ? 'met' : 'missed'}); the worker's CPU in those rounds ${ms(cpu.up)} ms (h2 up) and ${ms(cpu.down)} ms (down); h2's creates that succeeded after a retry: ${retriedH2} of ${PAIRS * PER_HOST}, the most attempts one took ${mostAttempts}`,
    );
    // h2's jobs really met the closed port (they retried), and waited only for themselves. The
    // pairs' ratios scatter by about ±10% on these shared 2-core machines (qemu starting under
    // TCG is most of a create), so the test fails only on what no scatter explains (h2's jobs
    // holding anything the others need would double their time); the figure printed is the
    // measurement against the 10%.
    expect(retriedH2).toBeGreaterThan(0);
    // The first dial refused pauses h2's queue in the worker (workers/run/host-breaker.ts): the
    // jobs it had taken fail once, the rest wait untaken, and all run once h2 answers again.
    // Without the pause each retried every backoff (2, 4, 8 s…) for as long as h2 was down.
    expect(mostAttempts).toBeLessThanOrEqual(2);
    expect(ratio).toBeLessThanOrEqual(1.25);
  }, 600_000);

  it('is no longer chosen for its zone once a health round finds it unreachable', async () => {
    const h2 = fleet.host('h2');
    await h2.sshd.down();
    try {
      await until('h2 reported unhealthy', async () => {
        const report = (await readHealth(fleet.scope.redis, fleet.scope.prefix)).get('h2');
        return report?.status === 'unhealthy';
      });
      const jobs = await Promise.all([0, 1, 2, 3].map(() => create({ zone: 'za' }, fresh('zd'))));
      expect(jobs.map((j) => j.id.split('/')[0])).toEqual(['h1', 'h1', 'h1', 'h1']);
      expect((await settle(jobs)).every((r) => r.outcome === 'succeeded')).toBe(true);
      await deleteAll(jobs.map((j) => j.id));
    } finally {
      await h2.sshd.up();
    }
  }, 300_000);
});

describe('two worker processes sharing the three hosts', () => {
  it('both run jobs, and no host ever runs more than its concurrency across both', async () => {
    workers.push(await startWorkerProcess(configPath, { readyTimeoutMs: 120_000 }));
    const planned = NAMES.flatMap((host) =>
      Array.from({ length: 8 }, () => ({ host, name: fresh(`tw${host}`) })),
    );
    const jobs = await Promise.all(planned.map((p) => create({ host: p.host }, p.name)));
    // BullMQ's worker takes its next job in the completion of the one before, so a process
    // holding a host's slots keeps them while that host's jobs wait: which process runs a burst
    // is a race it wins whole (CI runs saw the second process run all of one, and the first all
    // of another). The first stops taking jobs now, the burst just begun: its runs end or go
    // back to the queue, and the second runs the rest beside them, within the same limits.
    await workers[0]?.stop();
    expect((await settle(jobs)).map((r) => r.outcome)).toEqual(jobs.map(() => 'succeeded'));
    await deleteAll(jobs.map((j) => j.id));
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(workers.map((w) => drained(w)));
    const lines: string[] = [];
    for (const host of NAMES) {
      const queue = hostQueueName(host);
      const runs = workers.flatMap((w, i) => jobRuns(w, i, queue));
      const byWorker = workers.map((_, i) => runs.filter((r) => r.worker === i).length);
      const { max } = maxOverlap(
        runs.map((r) => ({ start: r.startedAt, end: r.endedAt, label: r.job })),
      );
      lines.push(
        `${host} (concurrency ${HOSTS[host].concurrency}): max ${max} at once, runs by worker ${byWorker.join('/')}`,
      );
      expect(max, host).toBeLessThanOrEqual(HOSTS[host].concurrency);
      expect(max, host).toBeGreaterThanOrEqual(1);
    }
    report(lines.join('; '));
    // The second process ran work of the burst (the first ran the file's earlier tests).
    const second = NAMES.flatMap((h) => jobRuns(workers[1] as WorkerProcess, 1, hostQueueName(h)));
    expect(second.length).toBeGreaterThan(0);
  }, 600_000);
});
