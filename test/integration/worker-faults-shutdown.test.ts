// Worker processes (issue #5) that are told to stop, or cannot start: SIGTERM with Redis
// unreachable, a listen address already taken, and SIGTERM with a job running (graceful,
// bounded by worker.shutdownTimeout, forced by a second signal). Real `kvm2 worker` processes,
// real Redis, the real libvirtd through sshd. "In the middle" is made deterministic by images
// whose download stalls until the test says go.
import net from 'node:net';
import type { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { sleep, tcpProxy } from '../harness/fault-kit.js';
import { startStallingProxy } from '../fakes/stalling-proxy.js';
import { faultHooks, faultRig, runOf, SHUTDOWN_TIMEOUT_MS } from '../harness/fault-rig.js';
import type { QueueFleet } from '../harness/queue-fleet.js';
import { startWorkerProcess } from '../harness/worker-process.js';

const rig = faultRig();
const {
  create,
  expectReleasedThenFinished,
  insideDownload,
  instanceName,
  newStall,
  outcomes,
  show,
  startWorker,
  workers,
  writeConfig,
} = rig;
let fleet: QueueFleet;
/** The queue host.h1, to read jobs' state, progress and attempts. */
let queue: Queue;

faultHooks(rig, (setup) => ({ fleet, queue } = setup));

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
  it('a worker whose listen address is taken starts no worker and exits non-zero', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      const w = await startWorkerProcess(writeConfig({ listen: `127.0.0.1:${port}` }), {
        readyTimeoutMs: 90_000,
        // The endpoints come first: the bind fails before any worker could take a job.
        readyMatch: (l) => l.msg === 'worker stopped',
      });
      workers.push(w);
      expect(w.logs.some((l) => l.msg === 'endpoints could not start; stopping')).toBe(true);
      expect(w.logs.some((l) => l.msg === 'worker ready')).toBe(false);
      expect((await w.exited).code).not.toBe(0);
    } finally {
      taken.close();
    }
  }, 120_000);
});

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

  it('forced with its host link wedged mid-fill: the job is released, its locks given back, before the exit', async () => {
    // The fill's cleanup removes its volumes whatever the cancel, on the host's link; wedged
    // (a partition), that call held the run through the teardown's waits, and the process
    // exited with the job still active and its locks held to their TTL.
    const proxy = await startStallingProxy();
    try {
      const base = fleet.configObject().hosts as Record<string, unknown>[];
      const hosts = [{ ...base[0], uri: `qemu+unix:///system?socket=${proxy.socketPath}` }];
      const image = await newStall('slow-wedged');
      const a = await startWorker(writeConfig({ shutdownTimeout: '60s' }, { hosts }));
      const name = instanceName('wedged');
      const job = await create(name, image.name);
      await insideDownload(image, job.jobId);
      proxy.stall();
      a.kill('SIGTERM');
      await a.waitForLog((l) => l.msg === 'shutting down', 10_000);
      a.kill('SIGTERM');
      const exit = await a.exited;
      expect(exit.code).toBe(0);
      // Released: delayed, no attempt spent, nothing of the instance's locked.
      expect(await queue.getJobState(job.jobId)).toBe('delayed');
      expect((await queue.getJob(job.jobId))?.attemptsMade).toBe(0);
      // (The host's watch lease, on the same wedged link, lapses on its TTL as a dead
      // watcher's does: another worker takes the events over then, docs/events.md.)
      const locks = await fleet.scope.redis.keys(`${fleet.scope.prefix}:lock:*`);
      expect(locks.filter((k) => !k.includes(':lock:watch:'))).toEqual([]);
    } finally {
      proxy.release();
      await proxy.close();
    }
  }, 180_000);
});
