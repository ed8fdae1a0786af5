// The chaos soak (issue #15): H namespace hosts, W real `kvm2 worker` processes, a real Sentinel
// group, and N random create/delete/gc requests over M names (a seeded plan) enqueued through
// the client while a seeded fault schedule kills and restarts workers, stops sshds, restarts
// libvirtds, fails Redis over and cuts workers' Redis connections. At the end it checks, with
// virsh on each host and redis-cli alone (none of kvm2's readers):
//   - every name is in the state its last request asked for (running with that create's uid,
//     or absent);
//   - no create made two domains (a monitor samples every host throughout: two libvirt domains
//     carrying one uid), and the foreign domain on each host is untouched;
//   - after a final GC, no kvm2 volume is left without its domain;
//   - every job has exactly one final result on the stream, none is still active, waiting,
//     delayed or prioritized, and every result's job exists;
// and returns the table: requests, faults by kind, results by outcome, retries, time to settle
// after the last fault, violations (must be none).
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Kvm2Client } from '../../queues/client.js';
import { hostQueueName, resultsKey } from '../../queues/names.js';
import { KVM2_XMLNS } from '../../src/provider/xml/metadata.js';
import { startHostFleet, type HostFleet } from './host-fleet.js';
import { prng } from './job-burst.js';
import type { NamespaceHost } from './ns-host.js';
import { TEST_WORKER } from './queue-fleet.js';
import { startSentinelGroup, type SentinelGroup } from './redis-sentinel.js';
import { startWorkerProcess, type WorkerProcess } from './worker-process.js';
import { sleep } from './fault-kit.js';

const run = promisify(execFile);
const FINAL = new Set(['succeeded', 'failed', 'superseded']);
const TAG = 'soak';

export interface SoakOptions {
  readonly seed: number;
  readonly hosts: number;
  readonly workers: number;
  readonly requests: number;
  readonly names: number;
  readonly faults: number;
  /** Time between requests, ms (drawn around it). */
  readonly requestEveryMs: number;
  /** Called with each line of progress. */
  readonly log?: (line: string) => void;
}

export type FaultKind =
  | 'worker-sigkill'
  | 'worker-sigterm'
  | 'sshd-stop'
  | 'libvirtd-restart'
  | 'redis-failover'
  | 'redis-cut';

const FAULT_KINDS: readonly FaultKind[] = [
  'worker-sigkill',
  'worker-sigterm',
  'sshd-stop',
  'libvirtd-restart',
  'redis-failover',
  'redis-cut',
];

export interface SoakReport {
  readonly seed: number;
  readonly requests: Readonly<Record<string, number>>;
  readonly faults: Readonly<Record<string, number>>;
  readonly outcomes: Readonly<Record<string, number>>;
  readonly retries: number;
  readonly settleMs: number;
  readonly totalMs: number;
  readonly violations: readonly string[];
  /** Each job that ended `failed`: op, instance, error code and message. */
  readonly failed: readonly string[];
}

interface Request {
  readonly kind: 'create' | 'delete' | 'gc';
  readonly id?: string;
  readonly uid?: string;
  readonly jobId: string;
}

/** The table the soak prints. */
export function formatSoakReport(r: SoakReport): string {
  const row = (k: string, v: string): string => `| ${k.padEnd(28)} | ${v.padEnd(60)} |`;
  const kinds = (m: Readonly<Record<string, number>>): string =>
    Object.entries(m)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  const total = (m: Readonly<Record<string, number>>): number =>
    Object.values(m).reduce((a, b) => a + b, 0);
  return [
    row('seed', String(r.seed)),
    row('requests', `${total(r.requests)} (${kinds(r.requests)})`),
    row('faults injected', `${total(r.faults)} (${kinds(r.faults)})`),
    row('final results by outcome', kinds(r.outcomes)),
    ...r.failed.map((f) => `  failed: ${f}`),
    row('retries (retrying results)', String(r.retries)),
    row('settled after the last fault', `${(r.settleMs / 1000).toFixed(1)} s`),
    row('whole run', `${(r.totalMs / 1000).toFixed(1)} s`),
    row('violations', String(r.violations.length)),
    ...r.violations.slice(0, 20).map((v) => `  violation: ${v}`),
  ].join('\n');
}

async function redisCli(port: number, args: string[]): Promise<unknown> {
  const { stdout } = await run('redis-cli', ['-p', String(port), '--json', ...args], {
    maxBuffer: 256 << 20,
  });
  return JSON.parse(stdout) as unknown;
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => undefined);
  // Two streams from the seed, so the plan does not depend on how the faults interleave with
  // it (the timing still varies from run to run).
  const random = prng(options.seed);
  const faultRandom = prng(options.seed ^ 0x5bd1e995);
  const pick = <T>(xs: readonly T[], from = random): T => xs[Math.floor(from() * xs.length)] as T;
  const startedAt = performance.now();

  const group: SentinelGroup = await startSentinelGroup();
  let fleet: HostFleet | undefined;
  const workers: (WorkerProcess | undefined)[] = [];
  let client: Kvm2Client | undefined;
  const violations: string[] = [];
  try {
    fleet = await startHostFleet('soak', options.hosts, {});
    const hostFleet = fleet;
    const overrides = {
      redis: { sentinel: group.config, prefix: fleet.scope.prefix },
      worker: { ...TEST_WORKER, shutdownTimeout: '5s' },
    };
    const hostExtras = Object.fromEntries(
      fleet.hosts.map((h) => [h.name, { firmware: 'bios', concurrency: 2 }]),
    );
    const configPath = fleet.writeConfig(overrides, hostExtras);
    const startWorker = (): Promise<WorkerProcess> =>
      startWorkerProcess(configPath, { readyTimeoutMs: 120_000 });
    for (let i = 0; i < options.workers; i++) workers.push(await startWorker());
    client = fleet.client(overrides, hostExtras);
    const kvm2 = client;

    // A domain on each host that kvm2 did not make: it must be there, as it was, at the end.
    const foreign = new Map<string, string>();
    for (const h of fleet.hosts) foreign.set(h.name, await defineForeign(h));

    const names = Array.from({ length: options.names }, (_, i) => {
      const host = fleet?.hosts[i % options.hosts]?.name ?? 'h1';
      return `${host}/s${i}`;
    });
    const hostOf = (id: string): NamespaceHost => hostFleet.host(id.split('/')[0] ?? '');

    // The monitor: every host's domains, sampled; a uid seen on two libvirt domains was made twice.
    const uidOfDomain = new Map<string, string>(); // libvirt uuid → kvm2 uid
    const domainsOfUid = new Map<string, Set<string>>();
    let monitoring = true;
    const monitor = (async () => {
      while (monitoring) {
        for (const h of hostFleet.hosts) {
          const listed = await h.virsh(['list', '--all', '--uuid', '--name']).catch(() => '');
          for (const line of listed.split('\n')) {
            const [uuid, name] = line.trim().split(/\s+/);
            if (uuid === undefined || name === undefined || !/^s\d+$/.test(name)) continue;
            if (uidOfDomain.has(uuid)) continue;
            const xml = await h.virsh(['metadata', uuid, KVM2_XMLNS]).catch(() => '');
            const uid = /\buid="([^"]+)"/.exec(xml)?.[1];
            if (uid === undefined) continue;
            uidOfDomain.set(uuid, uid);
            const seen = domainsOfUid.get(uid) ?? new Set<string>();
            seen.add(`${h.name}/${name}:${uuid}`);
            domainsOfUid.set(uid, seen);
          }
        }
        await sleep(300);
      }
    })();

    // The requests.
    const requests: Request[] = [];
    const last = new Map<string, { kind: 'create' | 'delete'; uid?: string }>();
    const counts: Record<string, number> = {
      create: 0,
      'create (resent uid)': 0,
      delete: 0,
      gc: 0,
    };
    const retryUnavailable = async <T>(send: () => Promise<T>): Promise<T> => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        try {
          return await send();
        } catch (err) {
          const code = (err as { code?: unknown }).code;
          if (code !== 'ERR_REDIS_UNAVAILABLE' || Date.now() > deadline) throw err;
          await sleep(200);
        }
      }
    };
    const keepList = (): string[] =>
      [...last.entries()].filter(([, v]) => v.kind === 'create').map(([id]) => id);
    let requesting = true;
    const requester = (async () => {
      try {
        for (let i = 0; i < options.requests; i++) {
          const roll = random();
          if (roll < 0.08) {
            const keep = keepList();
            const { jobId } = await retryUnavailable(() =>
              kvm2.gc({ tag: TAG, keep, graceMs: 2_000 }),
            );
            requests.push({ kind: 'gc', jobId });
            counts['gc'] = (counts['gc'] ?? 0) + 1;
          } else {
            const id = pick(names);
            const previous = last.get(id);
            if (roll < 0.6) {
              const resend = previous?.kind === 'create' && random() < 0.2;
              const uid = resend ? (previous.uid ?? crypto.randomUUID()) : crypto.randomUUID();
              const [host = '', name = ''] = id.split('/');
              const { jobId } = await retryUnavailable(() =>
                kvm2.create(
                  {
                    host,
                    name,
                    uid,
                    image: hostFleet.image,
                    tag: TAG,
                    userData: '#cloud-config\n',
                  },
                  { wait: false },
                ),
              );
              requests.push({ kind: 'create', id, uid, jobId });
              last.set(id, { kind: 'create', uid });
              const key = resend ? 'create (resent uid)' : 'create';
              counts[key] = (counts[key] ?? 0) + 1;
            } else {
              const { jobId } = await retryUnavailable(() => kvm2.delete(id));
              requests.push({ kind: 'delete', id, jobId });
              last.set(id, { kind: 'delete' });
              counts['delete'] = (counts['delete'] ?? 0) + 1;
            }
          }
          await sleep(options.requestEveryMs * (0.5 + random()));
        }
      } finally {
        requesting = false;
      }
    })();

    // The faults, one after another until the requests are all sent (and at least `faults`).
    const faults: Record<string, number> = {};
    let lastFaultEnd = performance.now();
    const injector = (async () => {
      let injected = 0;
      while (requesting || injected < options.faults) {
        await sleep(500 + faultRandom() * 2_500);
        const kind = pick(FAULT_KINDS, faultRandom);
        const started = performance.now();
        await inject(kind);
        injected += 1;
        faults[kind] = (faults[kind] ?? 0) + 1;
        lastFaultEnd = performance.now();
        log(`fault ${injected}: ${kind} (${Math.round(lastFaultEnd - started)} ms)`);
      }
    })();

    async function inject(kind: FaultKind): Promise<void> {
      switch (kind) {
        case 'worker-sigkill':
        case 'worker-sigterm': {
          const i = Math.floor(faultRandom() * workers.length);
          const w = workers[i];
          if (w === undefined) return;
          workers[i] = undefined;
          if (kind === 'worker-sigkill') {
            w.kill('SIGKILL');
            await w.exited;
          } else {
            await w.stop(10_000);
          }
          await sleep(200 + faultRandom() * 1_500);
          workers[i] = await startWorker();
          return;
        }
        case 'sshd-stop': {
          const h = pick(hostFleet.hosts, faultRandom);
          await h.sshd.down();
          await sleep(1_000 + faultRandom() * 3_000);
          await h.sshd.up();
          return;
        }
        case 'libvirtd-restart':
          await pick(hostFleet.hosts, faultRandom).restartLibvirtd();
          return;
        case 'redis-failover':
          await group.failover();
          return;
        case 'redis-cut': {
          const w = pick(
            workers.filter((x): x is WorkerProcess => x !== undefined),
            faultRandom,
          );
          const [, port = '0'] = (await group.master()).split(':');
          await cutRedis(w.pid, Number(port));
          return;
        }
      }
    }

    // Both awaited together: a fault that fails while requests are still being sent fails the
    // run (it was an unhandled rejection until the requester was done).
    const [sent, injected] = await Promise.allSettled([requester, injector]);
    if (sent.status === 'rejected') throw sent.reason;
    if (injected.status === 'rejected') throw injected.reason;
    log(`${requests.length} requests sent; waiting for their results`);

    // Every request's final result.
    const finals = await Promise.allSettled(
      requests.map((r) => kvm2.waitFor(r.jobId, { timeoutMs: 180_000 })),
    );
    const settledAt = performance.now();
    for (const [i, f] of finals.entries()) {
      if (f.status === 'rejected') {
        violations.push(
          `${requests[i]?.kind} ${requests[i]?.jobId}: no final result (${String(f.reason)})`,
        );
      }
    }

    // A last GC: keeps what should run, sweeps orphan volumes.
    const finalGc = await retryUnavailable(() =>
      kvm2.gc({ tag: TAG, keep: keepList(), graceMs: 1 }),
    );
    requests.push({ kind: 'gc', jobId: finalGc.jobId });
    const gcResult = await kvm2.waitFor(finalGc.jobId, { timeoutMs: 120_000 });
    if (gcResult.outcome !== 'succeeded')
      violations.push(`final gc: ${gcResult.outcome} ${gcResult.message ?? ''}`);
    await sleep(2_000); // deletes the GC enqueued, if any, run on the host queues
    monitoring = false;
    await monitor;

    // What each host has, read with virsh alone.
    for (const id of names) {
      const h = hostOf(id);
      const name = id.split('/')[1] ?? '';
      const want = last.get(id);
      const state = (await h.virsh(['domstate', name]).catch(() => 'absent')).trim();
      if (want === undefined || want.kind === 'delete') {
        if (state !== 'absent') violations.push(`${id}: last asked deleted, is ${state}`);
        continue;
      }
      if (state !== 'running') {
        violations.push(`${id}: last asked created (uid ${want.uid}), is ${state}`);
        continue;
      }
      const xml = await h.virsh(['metadata', name, KVM2_XMLNS]);
      const uid = /\buid="([^"]+)"/.exec(xml)?.[1];
      if (uid !== want.uid)
        violations.push(`${id}: runs uid ${uid}, last create asked ${want.uid}`);
    }
    for (const [uid, domains] of domainsOfUid) {
      if (domains.size > 1) violations.push(`uid ${uid} made twice: ${[...domains].join(', ')}`);
    }
    for (const h of fleet.hosts) {
      const was = foreign.get(h.name);
      const now = (await h.virsh(['domuuid', 'foreign']).catch(() => 'absent')).trim();
      if (now !== was) violations.push(`${h.name}: the foreign domain was ${was}, is ${now}`);
      const domains = new Set(await h.domains());
      for (const vol of await h.volumes()) {
        const m = /^kvm2-(.+?)(?:-seed\.iso|\.qcow2)$/.exec(vol);
        if (m === null || vol.startsWith('kvm2-base-')) continue;
        if (!domains.has(m[1] ?? ''))
          violations.push(`${h.name}: volume ${vol} without its domain`);
      }
    }

    // The stream and the queues, read with redis-cli alone on the master now.
    const [, masterPort = '0'] = (await group.master()).split(':');
    const port = Number(masterPort);
    const prefix = fleet.scope.prefix;
    const entries = (await redisCli(port, ['XRANGE', resultsKey(prefix), '-', '+'])) as [
      string,
      string[],
    ][];
    const outcomes: Record<string, number> = {};
    const failed: string[] = [];
    const finalsOf = new Map<string, number>();
    const finalEntries = new Map<string, string[]>(); // jobId → each final: id outcome attempt
    let retries = 0;
    const resultJobs = new Map<string, string>(); // jobId → queue
    for (const [id, fields] of entries) {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i] ?? '', fields[i + 1] ?? '');
      if (f.get('type') === 'event') continue;
      const jobId = f.get('jobId') ?? '';
      const op = f.get('op') ?? '';
      const outcome = f.get('outcome') ?? '';
      if (op === 'health') continue;
      if (outcome === 'retrying') retries += 1;
      if (FINAL.has(outcome)) {
        finalsOf.set(jobId, (finalsOf.get(jobId) ?? 0) + 1);
        const said = `${id} ${outcome} attempt ${f.get('attempt') ?? '?'}`;
        finalEntries.set(jobId, [...(finalEntries.get(jobId) ?? []), said]);
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
        if (outcome === 'failed') {
          const what = [op, f.get('instanceId'), f.get('errorCode'), f.get('message')];
          failed.push(what.filter((x) => x !== undefined).join(' '));
        }
      }
      const host = (f.get('instanceId') ?? '').split('/')[0] ?? '';
      resultJobs.set(jobId, op === 'gc' ? 'gc' : hostQueueName(host));
    }
    // What a job with more than one final result was, to tell how it got them: each final
    // entry (stream id, outcome, attempt) and the job's hash as BullMQ left it.
    const finalsSaid = async (jobId: string): Promise<string> => {
      const queue = resultJobs.get(jobId) ?? '';
      const hash = (await redisCli(port, ['HGETALL', `${prefix}:${queue}:${jobId}`])) as
        Record<string, string> | string[];
      const flat = Array.isArray(hash) ? hash : Object.entries(hash).flat();
      const job: string[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const k = flat[i] ?? '';
        if (
          ['atm', 'ats', 'stc', 'kvm2Final', 'finishedOn', 'processedOn', 'failedReason'].includes(
            k,
          )
        )
          job.push(`${k}=${flat[i + 1] ?? ''}`);
      }
      return `${(finalEntries.get(jobId) ?? []).join('; ')}; job ${job.join(' ') || 'gone'}`;
    };
    const reported = new Set<string>();
    for (const r of requests) {
      const n = finalsOf.get(r.jobId) ?? 0;
      if (n === 1 || reported.has(r.jobId)) continue;
      reported.add(r.jobId);
      const more = n > 1 ? ` (${await finalsSaid(r.jobId)})` : '';
      violations.push(`${r.kind} ${r.jobId}: ${n} final results${more}`);
    }
    const asked = new Set(requests.map((r) => r.jobId));
    for (const [jobId, n] of finalsOf) {
      if (n !== 1 && !asked.has(jobId))
        violations.push(`job ${jobId}: ${n} final results (${await finalsSaid(jobId)})`);
    }
    for (const [jobId, queue] of resultJobs) {
      const exists = Number(await redisCli(port, ['EXISTS', `${prefix}:${queue}:${jobId}`]));
      if (exists !== 1)
        violations.push(`a result names job ${jobId} of ${queue}, which does not exist`);
    }
    for (const queue of [...fleet.hosts.map((h) => hostQueueName(h.name)), 'gc']) {
      const base = `${prefix}:${queue}`;
      const left = {
        active: Number(await redisCli(port, ['LLEN', `${base}:active`])),
        wait: Number(await redisCli(port, ['LLEN', `${base}:wait`])),
        delayed: Number(await redisCli(port, ['ZCARD', `${base}:delayed`])),
        prioritized: Number(await redisCli(port, ['ZCARD', `${base}:prioritized`])),
      };
      for (const [state, n] of Object.entries(left)) {
        if (n !== 0) violations.push(`${queue}: ${n} jobs still ${state}`);
      }
    }

    return {
      seed: options.seed,
      requests: counts,
      faults,
      outcomes,
      retries,
      settleMs: Math.max(0, settledAt - lastFaultEnd),
      totalMs: performance.now() - startedAt,
      violations,
      failed,
    };
  } finally {
    await client?.close().catch(() => undefined);
    const running = workers.filter((w): w is WorkerProcess => w !== undefined);
    await Promise.all(running.map((w) => w.stop().catch(() => undefined)));
    await fleet?.cleanup().catch(() => undefined);
    await group.stop();
  }
}

/** A domain of someone else's on `host` (no kvm2 metadata), defined, not started: its uuid. */
async function defineForeign(host: NamespaceHost): Promise<string> {
  const xml = `<domain type='qemu'><name>foreign</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`;
  const file = `${host.dir}/foreign.xml`;
  await writeFile(file, xml);
  await host.virsh(['define', file]);
  return (await host.virsh(['domuuid', 'foreign'])).trim();
}

/** Kills every connection process `pid` holds to Redis on `port` (CLIENT KILL by address). */
async function cutRedis(pid: number, port: number): Promise<void> {
  // ESTAB 0 0 127.0.0.1:38276 127.0.0.1:43711 users:(("node",pid=19756,fd=23))
  const { stdout } = await run('ss', ['-Htnp', `( dport = :${port} )`]);
  for (const line of stdout.split('\n')) {
    if (!line.includes(`pid=${pid},`)) continue;
    const local = line.trim().split(/\s+/)[3];
    if (local === undefined) continue;
    await run('redis-cli', ['-p', String(port), 'CLIENT', 'KILL', 'ADDR', local]).catch(
      () => undefined,
    );
  }
}
