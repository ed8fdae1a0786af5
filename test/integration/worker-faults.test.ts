// Worker processes when things go wrong (issue #5): a worker SIGKILLed inside a create, sshd
// down and back, a key sshd does not accept, malformed payloads (refused by the producer, and
// forced into Redis by hand), and SIGTERM with a job running (graceful, bounded, forced by a
// second signal). Real `kvm2 worker` processes, real Redis, the real libvirtd through sshd.
// "In the middle" is made deterministic by images whose download stalls until the test says go.
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { hostQueueName } from '../../queues/names.js';
import type { ResultEntry } from '../../queues/results.js';
import {
  removeInstance,
  sleep,
  stallingImage,
  stopSshdListener,
  tcpProxy,
  waitUntil,
  type StallingImage,
} from '../harness/fault-kit.js';
import { poolVolumes } from '../harness/libvirt-objects.js';
import { startQueueFleet, type QueueFleet } from '../harness/queue-fleet.js';
import { resultsOfJob } from '../harness/results.js';
import { testHost } from '../harness/test-host.js';
import { virsh } from '../harness/virsh.js';
import { startWorkerProcess, type LogLine, type WorkerProcess } from '../harness/worker-process.js';

const SHUTDOWN_TIMEOUT_MS = 2_000;
// Shorter than the fleet's 3 s: a killed worker's job is found stalled, and its instance lock
// lapses, in about 1.5 s, which is most of what the kill tests wait for. A live worker renews
// both well inside that (the lease every 500 ms, BullMQ's lock every 750 ms).
const FAULT_WORKER = { lockTtl: '1500ms', stalledAfter: '1500ms' };
const USER_DATA = '#cloud-config\n';

let fleet: QueueFleet;
let client: Kvm2Client;
let connection: Redis;
/** The queue host.h1, to read jobs' state, progress and attempts. */
let queue: Queue;
const workers: WorkerProcess[] = [];
const stalls: StallingImage[] = [];
const instances: string[] = [];
const timings: Record<string, number> = {};
let fleetImages: Record<string, unknown> = {};
let fleetWorker: Record<string, unknown> = {};

/** A config with every stalling image made so far and `worker` settings merged in. */
function writeConfig(
  worker: Record<string, unknown> = {},
  overrides: Record<string, unknown> = {},
): string {
  const images = { ...fleetImages };
  for (const s of stalls) images[s.name] = s.config;
  return fleet.writeConfig({
    images,
    worker: {
      ...fleetWorker,
      ...FAULT_WORKER,
      shutdownTimeout: `${SHUTDOWN_TIMEOUT_MS}ms`,
      ...worker,
    },
    ...overrides,
  });
}

async function startWorker(configPath: string): Promise<WorkerProcess> {
  const w = await startWorkerProcess(configPath, { readyTimeoutMs: 90_000 });
  workers.push(w);
  return w;
}

async function newStall(label: string): Promise<StallingImage> {
  const s = await stallingImage(fleet, label);
  stalls.push(s);
  return s;
}

function instanceName(suffix: string): string {
  const name = fleet.name(suffix);
  instances.push(name);
  return name;
}

async function create(
  name: string,
  image: string,
  userData = USER_DATA,
): Promise<{ jobId: string; id: string }> {
  return client.create(
    { host: 'h1', name, image, tag: 'faults', userData },
    {
      wait: false,
    },
  );
}

/** The worker's "job run" line for this job: logged when a run ends, whatever its outcome. */
const runOf =
  (jobId: string) =>
  (l: LogLine): boolean =>
    l.msg === 'job run' && l.job === jobId;

async function progressPhase(jobId: string): Promise<string | undefined> {
  const job = await queue.getJob(jobId);
  const progress = job?.progress as { phase?: string } | undefined;
  return typeof progress === 'object' ? progress.phase : undefined;
}

/** Waits until a worker sits inside the job's image download, stalled by the image server. */
async function insideDownload(image: StallingImage, jobId: string): Promise<void> {
  await waitUntil(
    async () => {
      await Promise.race([image.reached, sleep(50)]);
      return (await progressPhase(jobId)) === 'download';
    },
    60_000,
    `job ${jobId} to stall inside its image download`,
  );
  await image.reached;
  expect(await queue.getJobState(jobId)).toBe('active');
}

function show(label: string, ms: number): void {
  timings[label] = ms;
  process.stdout.write(`[worker-faults] ${label}: ${ms} ms\n`);
}

/**
 * One domain, running, for the fleet; its overlay and seed and no other instance volume; the
 * image's base and marker and nothing else under the base's name (no half-made base).
 */
async function expectOnlyInstanceVolumes(name: string, image: StallingImage): Promise<void> {
  expect(await fleet.domains()).toEqual([name]);
  expect((await virsh(['domstate', name])).trim()).toBe('running');
  expect(await fleet.volumes()).toEqual([`kvm2-${name}-seed.iso`, `kvm2-${name}.qcow2`]);
  const baseVolumes = (await poolVolumes()).filter((v) => v.startsWith(image.baseVolume));
  expect(baseVolumes).toEqual([image.baseVolume, image.markerVolume]);
}

async function outcomes(jobId: string): Promise<ResultEntry[]> {
  return resultsOfJob(fleet.scope.redis, fleet.scope.prefix, jobId);
}

/** Stops every worker still running (SIGTERM, then SIGKILL after 20 s). */
async function stopAll(): Promise<void> {
  await Promise.all(workers.map((w) => w.stop(20_000)));
}

beforeAll(async () => {
  fleet = await startQueueFleet('wf');
  const base = fleet.configObject();
  fleetImages = base['images'] as Record<string, unknown>;
  fleetWorker = base['worker'] as Record<string, unknown>;
  client = fleet.client();
  connection = new Redis(fleet.scope.url, { maxRetriesPerRequest: null });
  queue = new Queue(hostQueueName('h1'), { connection, prefix: fleet.scope.prefix });
}, 120_000);

// Whatever a test left running (it failed half-way, say) must not take the next test's jobs.
afterEach(async () => {
  for (const s of stalls) s.release();
  await stopAll();
  await Promise.all(instances.splice(0).map(removeInstance));
}, 60_000);

afterAll(async () => {
  for (const s of stalls) s.release();
  await stopAll();
  for (const w of workers) {
    if (w.child.exitCode === null && w.child.signalCode === null) w.kill('SIGKILL');
  }
  await queue?.close();
  await connection?.quit().catch(() => connection.disconnect());
  await client?.close();
  await Promise.all(instances.map(removeInstance));
  for (const s of stalls) {
    for (const vol of [s.markerVolume, s.baseVolume]) {
      await virsh(['vol-delete', '--pool', 'default', vol]).catch(() => undefined);
    }
  }
  await fleet?.cleanup();
  process.stdout.write(`[worker-faults] timings: ${JSON.stringify(timings)}\n`);
}, 180_000);

describe('a worker killed in the middle of a create', () => {
  it('SIGKILL inside the image download: another worker finishes the job; one domain, no leaked volume', async () => {
    const image = await newStall('slow-kill');
    const configPath = writeConfig();
    const a = await startWorker(configPath);
    const name = instanceName('kill');
    const job = await create(name, image.name);
    await insideDownload(image, job.jobId);
    expect(a.logs.some(runOf(job.jobId))).toBe(false); // its run has not ended

    a.kill('SIGKILL');
    const killedAt = Date.now();
    expect((await a.exited).signal).toBe('SIGKILL');
    image.release();
    const b = await startWorker(configPath);

    const result = await client.waitFor(job.jobId, { timeoutMs: 120_000 });
    show('SIGKILL → succeeded on worker B', Date.now() - killedAt);
    expect(result).toMatchObject({ outcome: 'succeeded', op: 'create', instanceId: `h1/${name}` });
    // A wrote no result (killed); B's run is the one that ended it.
    expect((await outcomes(job.jobId)).map((r) => r.outcome)).toEqual(['succeeded']);
    await b.waitForLog(runOf(job.jobId), 10_000); // (logged just after the result)
    await waitUntil(
      async () => (await queue.getJobState(job.jobId)) === 'completed',
      10_000,
      `job ${job.jobId} to be completed`,
    );
    const finished = await queue.getJob(job.jobId);
    expect(finished?.stalledCounter).toBe(1); // it came back through BullMQ's stall check

    // The base A had half-uploaded was removed as debris and filled whole by B.
    await expectOnlyInstanceVolumes(name, image);
  }, 180_000);
});

describe('sshd stopped, then restarted', () => {
  it('the create is retried (transient) and succeeds once sshd is back', async () => {
    await startWorker(writeConfig());
    const name = instanceName('sshd');
    let restarted = false;
    try {
      await stopSshdListener(fleet.sshd);
      const stoppedAt = Date.now();
      const job = await create(name, fleet.image);
      await waitUntil(
        async () => (await outcomes(job.jobId)).some((r) => r.outcome === 'retrying'),
        60_000,
        `a retrying result for job ${job.jobId}`,
      );
      show('sshd down → first retrying result', Date.now() - stoppedAt);
      await fleet.sshd.restart();
      restarted = true;
      const restartedAt = Date.now();

      const result = await client.waitFor(job.jobId, { timeoutMs: 120_000 });
      show('sshd restarted → succeeded', Date.now() - restartedAt);
      expect(result).toMatchObject({
        outcome: 'succeeded',
        op: 'create',
        instanceId: `h1/${name}`,
      });
      const all = await outcomes(job.jobId);
      const retries = all.slice(0, -1);
      expect(retries.length).toBeGreaterThanOrEqual(1);
      for (const r of retries) {
        expect(r).toMatchObject({
          outcome: 'retrying',
          errorKind: 'transient',
          errorCode: 'ERR_LIBVIRT_DIAL',
        });
      }
      expect(all.map((r) => r.attempt)).toEqual(all.map((_, i) => i + 1));
      expect(result.attempt).toBeLessThanOrEqual(5);
      process.stdout.write(
        `[worker-faults] sshd: ${retries.length} retrying result(s), first: ${retries[0]?.errorCode ?? ''} ${retries[0]?.message ?? ''}\n`,
      );
      expect(await fleet.domains()).toEqual([name]);
    } finally {
      if (!restarted) await fleet.sshd.restart();
    }
  }, 180_000);
});

describe('a key sshd does not accept', () => {
  it('fails after one attempt with errorKind permanent', async () => {
    const stranger = await fleet.sshd.makeKey('stranger');
    const host = testHost(fleet.sshd, fleet.net.name, {
      concurrency: 2,
      uri: fleet.sshd.uri('/system', { keyfile: stranger.privatePath }),
    });
    await startWorker(writeConfig({}, { hosts: [host] }));
    const name = instanceName('key');
    const job = await create(name, fleet.image);

    const result = await client.waitFor(job.jobId, { timeoutMs: 60_000 });
    expect(result).toMatchObject({ outcome: 'failed', errorKind: 'permanent', attempt: 1 });
    process.stdout.write(
      `[worker-faults] wrong key: ${result.errorCode ?? ''} ${result.message ?? ''}\n`,
    );
    // The result is written just before BullMQ moves the job: failed, final, no retry coming.
    await waitUntil(
      async () => (await queue.getJobState(job.jobId)) === 'failed',
      10_000,
      `job ${job.jobId} to be failed`,
    );
    const failed = await queue.getJob(job.jobId);
    expect(failed?.attemptsMade).toBe(1);
    expect(await outcomes(job.jobId)).toHaveLength(1);
    expect(await fleet.domains()).toEqual([]);
  }, 120_000);
});

describe('malformed payloads', () => {
  it('the producer refuses a bad name, naming the field; nothing is enqueued', async () => {
    const before = await queue.getJobCounts();
    const keysBefore = (await fleet.scope.keys()).length;
    await expect(
      client.create(
        { host: 'h1', name: 'Not_A_Name', image: fleet.image, tag: 'faults', userData: USER_DATA },
        { wait: false },
      ),
    ).rejects.toMatchObject({
      name: 'Kvm2Error',
      code: 'ERR_INVALID_JOB',
      kind: 'permanent',
      message: expect.stringContaining('job.create.name') as unknown,
    });
    expect(await queue.getJobCounts()).toEqual(before);
    expect((await fleet.scope.keys()).length).toBeLessThanOrEqual(keysBefore);
  });

  it('a payload forced into Redis by hand fails permanently in the worker after one attempt', async () => {
    const forced = await queue.add('create', { garbage: true }, { attempts: 3 });
    const jobId = forced.id ?? '';
    // A well-formed job of a fleet queue, put on a host queue.
    const misplaced = await queue.add('gc', { tag: 'ci', keep: [], graceMs: 0 }, { attempts: 3 });
    await startWorker(writeConfig());

    expect(await client.waitFor(misplaced.id ?? '', { timeoutMs: 60_000 })).toMatchObject({
      outcome: 'failed',
      op: 'gc',
      errorKind: 'permanent',
      errorCode: 'ERR_INVALID_JOB',
      attempt: 1,
      message: expect.stringContaining('do not belong on queue') as unknown,
    });

    const result = await client.waitFor(jobId, { timeoutMs: 60_000 });
    expect(result).toMatchObject({
      outcome: 'failed',
      op: 'create',
      errorKind: 'permanent',
      errorCode: 'ERR_INVALID_JOB',
      attempt: 1,
      message: expect.stringContaining('job.create.name') as unknown,
    });
    expect(await outcomes(jobId)).toHaveLength(1);
    await waitUntil(
      async () => (await queue.getJobState(jobId)) === 'failed',
      10_000,
      `job ${jobId} to be failed`,
    );
    const failed = await queue.getJob(jobId);
    expect(failed?.attemptsMade).toBe(1);
    expect(failed?.failedReason).toContain('job.create.name');
  }, 120_000);
});

describe('Redis gone during shutdown', () => {
  /** A worker reaching Redis through a TCP proxy, started, then the proxy cut. */
  async function workerWithRedisCut(): Promise<Awaited<ReturnType<typeof startWorker>>> {
    const proxy = await tcpProxy(Number(new URL(fleet.scope.url).port));
    // No job runs: the graceful wait has nothing to wait for, so it is kept short.
    const config = writeConfig(
      { shutdownTimeout: '500ms' },
      { redis: { url: `redis://127.0.0.1:${proxy.port}`, prefix: fleet.scope.prefix } },
    );
    const w = await startWorker(config);
    await proxy.cut();
    await w.waitForLog((l) => l.msg === 'redis error', 10_000);
    return w;
  }

  it('SIGTERM still ends the process in bounded time, with Redis unreachable', async () => {
    const w = await workerWithRedisCut();
    w.kill('SIGTERM');
    const signalledAt = Date.now();
    const exit = await Promise.race([
      w.exited,
      sleep(SHUTDOWN_TIMEOUT_MS + 40_000).then(() => undefined),
    ]);
    expect(exit, 'the worker did not exit with Redis unreachable').toBeDefined();
    show('Redis unreachable: SIGTERM → process exited', (exit?.at ?? NaN) - signalledAt);
    expect(w.logs.some((l) => l.msg === 'worker stopped')).toBe(true);
  }, 120_000);
});

describe('endpoints that cannot start', () => {
  it('a worker whose listen address is taken stops its workers and exits non-zero', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      const w = await startWorkerProcess(writeConfig({ listen: `127.0.0.1:${port}` }), {
        readyTimeoutMs: 90_000,
        // The runtime started (its workers took jobs) before the bind failed: it is closed,
        // its jobs released, not left to stall when the process goes.
        readyMatch: (l) => l.msg === 'worker stopped',
      });
      workers.push(w);
      expect(w.logs.some((l) => l.msg === 'endpoints could not start; stopping')).toBe(true);
      expect((await w.exited).code).not.toBe(0);
    } finally {
      taken.close();
    }
  }, 120_000);
});

/**
 * A job a shutdown released: back in the queue, no attempt spent, no result written; once its
 * image is let go, a new worker (on `configPath`) finishes it at attempt 1.
 */
async function expectReleasedThenFinished(
  jobId: string,
  name: string,
  image: StallingImage,
  configPath: string,
): Promise<void> {
  const released = await queue.getJob(jobId);
  expect(['delayed', 'waiting']).toContain(await released?.getState());
  expect(released?.attemptsMade).toBe(0);
  expect(await outcomes(jobId)).toEqual([]);

  image.release();
  const b = await startWorker(configPath);
  const result = await client.waitFor(jobId, { timeoutMs: 120_000 });
  expect(result).toMatchObject({ outcome: 'succeeded', attempt: 1, instanceId: `h1/${name}` });
  expect(await outcomes(jobId)).toHaveLength(1);
  await b.waitForLog(runOf(jobId), 10_000);
  await expectOnlyInstanceVolumes(name, image);
}

describe('SIGTERM with a job running', () => {
  it('a job that ends within worker.shutdownTimeout completes before the process exits', async () => {
    const image = await newStall('slow-graceful');
    const a = await startWorker(writeConfig({ shutdownTimeout: '30s' }));
    const name = instanceName('graceful');
    const job = await create(name, image.name);
    await insideDownload(image, job.jobId);

    a.kill('SIGTERM');
    const signalledAt = Date.now();
    await a.waitForLog((l) => l.msg === 'shutting down', 10_000);
    await sleep(1_000);
    expect(a.child.exitCode).toBeNull(); // waiting for its job, not gone
    image.release();
    const releasedAt = Date.now();
    const exit = await a.exited;
    show('graceful: stall released → process exited', exit.at - releasedAt);
    show('graceful: SIGTERM → process exited', exit.at - signalledAt);
    expect(exit.code).toBe(0);
    expect(exit.at - signalledAt).toBeLessThan(30_000);

    // A finished the job itself before it exited: one result, its first attempt.
    const all = await outcomes(job.jobId);
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ outcome: 'succeeded', attempt: 1, instanceId: `h1/${name}` });
    expect(a.logs.some(runOf(job.jobId))).toBe(true);
    expect(await queue.getJobState(job.jobId)).toBe('completed');
    expect(a.logs.some((l) => l.msg === 'shutdown: releasing the jobs still running')).toBe(false);
  }, 180_000);

  it('a job still running at worker.shutdownTimeout is released (no attempt spent) and finished by another worker', async () => {
    const image = await newStall('slow-release');
    const configPath = writeConfig();
    const a = await startWorker(configPath);
    const name = instanceName('release');
    const job = await create(name, image.name);
    await insideDownload(image, job.jobId);

    a.kill('SIGTERM');
    const signalledAt = Date.now();
    const exit = await a.exited;
    const took = exit.at - signalledAt;
    show(`bounded: SIGTERM → exited (shutdownTimeout ${SHUTDOWN_TIMEOUT_MS} ms)`, took);
    expect(exit.code).toBe(0);
    expect(took).toBeGreaterThanOrEqual(SHUTDOWN_TIMEOUT_MS - 500);
    expect(took).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 8_000);
    expect(a.logs.some((l) => l.msg === 'shutdown: releasing the jobs still running')).toBe(true);

    await expectReleasedThenFinished(job.jobId, name, image, configPath);
  }, 180_000);

  it('a second SIGTERM forces: the process exits well under shutdownTimeout and the job is not lost', async () => {
    const image = await newStall('slow-force');
    const LONG_TIMEOUT_MS = 60_000;
    const a = await startWorker(writeConfig({ shutdownTimeout: `${LONG_TIMEOUT_MS}ms` }));
    const name = instanceName('force');
    const job = await create(name, image.name);
    await insideDownload(image, job.jobId);

    a.kill('SIGTERM');
    const firstAt = Date.now();
    await a.waitForLog((l) => l.msg === 'shutting down', 10_000);
    await sleep(500);
    expect(a.child.exitCode).toBeNull();
    a.kill('SIGTERM');
    const secondAt = Date.now();
    const exit = await a.exited;
    show('forced: second SIGTERM → exited', exit.at - secondAt);
    show(
      `forced: first SIGTERM → exited (shutdownTimeout ${LONG_TIMEOUT_MS} ms)`,
      exit.at - firstAt,
    );
    expect(exit.code).toBe(0);
    expect(exit.at - secondAt).toBeLessThan(8_000);
    expect(a.logs.some((l) => l.msg === 'second signal: forcing shutdown')).toBe(true);

    await expectReleasedThenFinished(job.jobId, name, image, writeConfig());
  }, 180_000);
});

describe('a lost instance lock', () => {
  it('cancels the running job (retrying, transient); the retry waits for the key, then succeeds', async () => {
    const image = await newStall('lock-lost');
    await startWorker(writeConfig());
    const name = instanceName('lost');
    const job = await create(name, image.name);
    await insideDownload(image, job.jobId);

    // Another holder takes the key (as if ours had lapsed): the lease's next renewal (every
    // lockTtl/3 = 500 ms) finds a foreign token and cancels the job's work.
    const lockKey = `${fleet.scope.prefix}:lock:instance:h1/${name}`;
    expect(await connection.get(lockKey)).not.toBeNull();
    await connection.set(lockKey, 'another-holder', 'PX', 2_500);
    const stolenAt = Date.now();
    await waitUntil(
      async () => (await outcomes(job.jobId)).length > 0,
      30_000,
      `job ${job.jobId} to report the lost lock`,
    );
    show('lock taken → job cancelled (retrying result)', Date.now() - stolenAt);
    const [first] = await outcomes(job.jobId);
    expect(first).toMatchObject({
      outcome: 'retrying',
      errorKind: 'transient',
      errorCode: 'ERR_LOCK_LOST',
      attempt: 1,
    });
    expect(first?.message).toMatch(/lock on instance:h1\/.* lost/);
    image.release();

    // The retry finds the key busy until the other holder's TTL lapses, then does the work.
    const result = await client.waitFor(job.jobId, { timeoutMs: 120_000 });
    expect(result).toMatchObject({ outcome: 'succeeded', attempt: 2 });
    expect(Date.now() - stolenAt).toBeGreaterThanOrEqual(2_500);
    await expectOnlyInstanceVolumes(name, image);
  }, 180_000);
});

describe('a job whose workers keep dying', () => {
  it('fails once BullMQ gives up on it (4 stalls), with a failed result on the stream', async () => {
    const image = await newStall('stall-out');
    const configPath = writeConfig();
    const name = instanceName('stallout');
    // A marker no log line could carry by chance: what the workers' logs are searched for.
    const secret = `#cloud-config\n# kvm2-secret-${randomUUID()}\n`;
    const job = await create(name, image.name, secret);
    const runs: WorkerProcess[] = [];
    const path = `/${image.name}.qcow2`;
    // Kill each worker inside the download (every GET stalls until release, never given):
    // BullMQ allows 3 stalls (workers/runtime.ts MAX_STALLED); the 4th fails the job.
    for (let kill = 1; kill <= 4; kill++) {
      const w = await startWorker(configPath);
      runs.push(w);
      await waitUntil(
        () => Promise.resolve(fleet.images.stats(path).gets >= kill),
        60_000,
        `download ${kill} of job ${job.jobId} to start`,
      );
      await sleep(200); // inside the stalled body
      w.kill('SIGKILL');
      await w.exited;
    }
    const last = await startWorker(configPath);
    runs.push(last);
    const result = await client.waitFor(job.jobId, { timeoutMs: 90_000 });
    expect(result).toMatchObject({
      outcome: 'failed',
      errorKind: 'transient',
      errorCode: 'ERR_JOB_STALLED',
      instanceId: `h1/${name}`,
    });
    expect(await queue.getJobState(job.jobId)).toBe('failed');
    expect((await outcomes(job.jobId)).map((r) => r.outcome)).toEqual(['failed']);
    const marker = secret.split('\n')[1] ?? '';
    expect(runs.flatMap((w) => w.logs).length).toBeGreaterThan(0);
    for (const w of runs) {
      expect(JSON.stringify(w.logs)).not.toContain(marker);
      expect(w.stderr()).not.toContain(marker);
    }
    expect(JSON.stringify(result)).not.toContain(marker);
    image.release();
  }, 240_000);
});
