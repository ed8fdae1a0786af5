// What the worker fault tests run: a queue fleet (test/harness/queue-fleet.ts) with real
// `kvm2 worker` processes on short settings, images whose download stalls until the test says
// go (test/harness/fault-kit.ts), the host queue h1 read directly, and the checks the tests
// share. Workers still running and instances named through the rig are removed after each test.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { hostQueueName } from '../../queues/names.js';
import type { ResultEntry } from '../../queues/results.js';
import {
  removeInstance,
  sleep,
  stallingImage,
  waitUntil,
  type StallingImage,
} from './fault-kit.js';
import { poolVolumes } from './libvirt-objects.js';
import { startQueueFleet, type QueueFleet } from './queue-fleet.js';
import { resultsOfJob } from './results.js';
import { virsh } from './virsh.js';
import { startWorkerProcess, type LogLine, type WorkerProcess } from './worker-process.js';

export const SHUTDOWN_TIMEOUT_MS = 2_000;
// Shorter than the fleet's 3 s: a killed worker's job is found stalled, and its instance lock
// lapses, in about 1.5 s, which is most of what the kill tests wait for. A live worker renews
// both well inside that (the lease every 500 ms, BullMQ's lock every 750 ms).
const FAULT_WORKER = { lockTtl: '1500ms', stalledAfter: '1500ms' };
export const USER_DATA = '#cloud-config\n';

/** The worker's "job run" line for this job: logged when a run ends, whatever its outcome. */
export const runOf =
  (jobId: string) =>
  (l: LogLine): boolean =>
    l.msg === 'job run' && l.job === jobId;

export interface FaultSetup {
  readonly fleet: QueueFleet;
  readonly client: Kvm2Client;
  readonly connection: Redis;
  /** The queue host.h1, to read jobs' state, progress and attempts. */
  readonly queue: Queue;
}

export interface FaultRig {
  /** Every worker started; a test that starts one itself adds it here. */
  readonly workers: WorkerProcess[];
  /** A config with every stalling image made so far and `worker` settings merged in. */
  writeConfig: (worker?: Record<string, unknown>, overrides?: Record<string, unknown>) => string;
  startWorker: (configPath: string) => Promise<WorkerProcess>;
  newStall: (label: string) => Promise<StallingImage>;
  /** A fleet instance name, removed after the test. */
  instanceName: (suffix: string) => string;
  create: (
    name: string,
    image: string,
    userData?: string,
  ) => Promise<{ jobId: string; id: string }>;
  /** Waits until a worker sits inside the job's image download, stalled by the image server. */
  insideDownload: (image: StallingImage, jobId: string) => Promise<void>;
  /** Prints a timing, and keeps it for the summary stop() prints. */
  show: (label: string, ms: number) => void;
  /**
   * One domain, running, for the fleet; its overlay and seed and no other instance volume; the
   * image's base and marker and nothing else under the base's name (no half-made base).
   */
  expectOnlyInstanceVolumes: (name: string, image: StallingImage) => Promise<void>;
  outcomes: (jobId: string) => Promise<ResultEntry[]>;
  /**
   * A job a shutdown released: back in the queue, no attempt spent, no result written; once its
   * image is let go, a new worker (on `configPath`) finishes it at attempt 1.
   */
  expectReleasedThenFinished: (
    jobId: string,
    name: string,
    image: StallingImage,
    configPath: string,
  ) => Promise<void>;
  start: () => Promise<FaultSetup>;
  /** Releases the stalls, stops the workers, removes the test's instances. */
  afterTest: () => Promise<void>;
  stop: () => Promise<void>;
}

export function faultRig(): FaultRig {
  let fleet: QueueFleet | undefined;
  let client: Kvm2Client | undefined;
  let connection: Redis | undefined;
  let queue: Queue | undefined;
  const workers: WorkerProcess[] = [];
  const stalls: StallingImage[] = [];
  const instances: string[] = [];
  const timings: Record<string, number> = {};
  let fleetImages: Record<string, unknown> = {};
  let fleetWorker: Record<string, unknown> = {};

  const started = (): FaultSetup => {
    if (!fleet || !client || !connection || !queue) {
      throw new Error('faultRig: start() first');
    }
    return { fleet, client, connection, queue };
  };

  function writeConfig(
    worker: Record<string, unknown> = {},
    overrides: Record<string, unknown> = {},
  ): string {
    const images = { ...fleetImages };
    for (const s of stalls) images[s.name] = s.config;
    return started().fleet.writeConfig({
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
    const s = await stallingImage(started().fleet, label);
    stalls.push(s);
    return s;
  }

  function instanceName(suffix: string): string {
    const name = started().fleet.name(suffix);
    instances.push(name);
    return name;
  }

  async function create(
    name: string,
    image: string,
    userData = USER_DATA,
  ): Promise<{ jobId: string; id: string }> {
    return started().client.create(
      { host: 'h1', name, image, tag: 'faults', userData },
      {
        wait: false,
      },
    );
  }

  async function progressPhase(jobId: string): Promise<string | undefined> {
    const job = await started().queue.getJob(jobId);
    const progress = job?.progress as { phase?: string } | undefined;
    return typeof progress === 'object' ? progress.phase : undefined;
  }

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
    expect(await started().queue.getJobState(jobId)).toBe('active');
  }

  function show(label: string, ms: number): void {
    timings[label] = ms;
    process.stdout.write(`[worker-faults] ${label}: ${ms} ms\n`);
  }

  async function expectOnlyInstanceVolumes(name: string, image: StallingImage): Promise<void> {
    const { fleet } = started();
    expect(await fleet.domains()).toEqual([name]);
    expect((await virsh(['domstate', name])).trim()).toBe('running');
    expect(await fleet.volumes()).toEqual([`kvm2-${name}-seed.iso`, `kvm2-${name}.qcow2`]);
    const baseVolumes = (await poolVolumes()).filter((v) => v.startsWith(image.baseVolume));
    expect(baseVolumes).toEqual([image.baseVolume, image.markerVolume]);
  }

  async function outcomes(jobId: string): Promise<ResultEntry[]> {
    const { fleet } = started();
    return resultsOfJob(fleet.scope.redis, fleet.scope.prefix, jobId);
  }

  /** Stops every worker still running (SIGTERM, then SIGKILL after 20 s). */
  async function stopAll(): Promise<void> {
    await Promise.all(workers.map((w) => w.stop(20_000)));
  }

  async function expectReleasedThenFinished(
    jobId: string,
    name: string,
    image: StallingImage,
    configPath: string,
  ): Promise<void> {
    const { client, queue } = started();
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

  return {
    workers,
    writeConfig,
    startWorker,
    newStall,
    instanceName,
    create,
    insideDownload,
    show,
    expectOnlyInstanceVolumes,
    outcomes,
    expectReleasedThenFinished,
    async start() {
      fleet = await startQueueFleet('wf');
      const base = fleet.configObject();
      fleetImages = base['images'] as Record<string, unknown>;
      fleetWorker = base['worker'] as Record<string, unknown>;
      client = fleet.client();
      connection = new Redis(fleet.scope.url, { maxRetriesPerRequest: null });
      queue = new Queue(hostQueueName('h1'), { connection, prefix: fleet.scope.prefix });
      return started();
    },
    async afterTest() {
      for (const s of stalls) s.release();
      await stopAll();
      await Promise.all(instances.splice(0).map(removeInstance));
    },
    async stop() {
      for (const s of stalls) s.release();
      await stopAll();
      for (const w of workers) {
        if (w.child.exitCode === null && w.child.signalCode === null) w.kill('SIGKILL');
      }
      await queue?.close();
      const redis = connection;
      await redis?.quit().catch(() => redis.disconnect());
      await client?.close();
      await Promise.all(instances.map(removeInstance));
      for (const s of stalls) {
        for (const vol of [s.markerVolume, s.baseVolume]) {
          await virsh(['vol-delete', '--pool', 'default', vol]).catch(() => undefined);
        }
      }
      await fleet?.cleanup();
      process.stdout.write(`[worker-faults] timings: ${JSON.stringify(timings)}\n`);
    },
  };
}

/**
 * Registers a test file's hooks for `rig`: started before the file's tests (`onStart` takes what
 * start() made), cleaned after each test (whatever a test left running, when it failed half-way,
 * must not take the next test's jobs), stopped after all.
 */
export function faultHooks(rig: FaultRig, onStart: (setup: FaultSetup) => void): void {
  beforeAll(async () => onStart(await rig.start()), 120_000);
  afterEach(() => rig.afterTest(), 60_000);
  afterAll(() => rig.stop(), 180_000);
}
