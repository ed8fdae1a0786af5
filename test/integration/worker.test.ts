// The queue product end to end with real worker processes (`kvm2 worker`), real Redis, the
// real libvirtd through sshd: create and delete through the client library, GC, health
// schedulers and the health hash, the worker's endpoints, and jobs that must fail at once.
import { randomBytes, createHash } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostQueueName } from '../../queues/names.js';
import { startQueueFleet, type QueueFleet } from '../harness/queue-fleet.js';
import { waitUntil } from '../harness/fault-kit.js';
import { virsh } from '../harness/virsh.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

let fleet: QueueFleet;
let worker: WorkerProcess | undefined;
let configPath = '';
// A raw image of its own (random bytes, so never cached), sent slowly: the create's progress
// shows the download's bytes.
const slowImage = randomBytes(4 << 20);
const slowSha = createHash('sha256').update(slowImage).digest('hex');
let overrides: Record<string, unknown> = {};

beforeAll(async () => {
  fleet = await startQueueFleet('wk');
  fleet.images.serve('/slow.raw', { data: slowImage, chunkBytes: 256 << 10, chunkDelayMs: 150 });
  overrides = {
    images: {
      ...(fleet.configObject()['images'] as Record<string, unknown>),
      slow: { url: fleet.images.url('/slow.raw'), sha256: slowSha, format: 'raw' },
    },
  };
  configPath = fleet.writeConfig(overrides);
  worker = await startWorkerProcess(configPath);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await fleet?.cleanup();
  await virsh(['vol-delete', '--pool', 'default', `kvm2-base-${slowSha}.raw`]).catch(
    () => undefined,
  );
  await virsh(['vol-delete', '--pool', 'default', `kvm2-base-${slowSha}.raw.sha256`]).catch(
    () => undefined,
  );
}, 120_000);

describe('create and delete through the client library', () => {
  it('create ends with a running domain and a succeeded result; delete removes it', async () => {
    const client = fleet.client();
    try {
      const name = fleet.name('cd');
      const created = await client.create(
        { host: 'h1', name, image: fleet.image, tag: 'wk', userData: '#cloud-config\n' },
        { wait: false },
      );
      const result = await client.waitFor(created.jobId, { timeoutMs: 60_000 });
      expect(result).toMatchObject({
        outcome: 'succeeded',
        op: 'create',
        instanceId: `h1/${name}`,
      });
      expect(result.state).toMatch(/^(running|provisioning)$/);
      expect((await virsh(['domstate', name])).trim()).toBe('running');

      const deleted = await client.delete(created.id);
      const gone = await client.waitFor(deleted.jobId, { timeoutMs: 60_000 });
      expect(gone).toMatchObject({ outcome: 'succeeded', op: 'delete', state: 'deleted' });
      expect(await fleet.domains()).not.toContain(name);
      expect(await fleet.volumes()).toEqual([]);
    } finally {
      await client.close();
    }
  }, 120_000);

  it('a domain found off while its create waits for the address is started again, and the wait goes on', async () => {
    const client = fleet.client();
    const queue = new Queue(hostQueueName('h1'), {
      connection: fleet.scope.redis,
      prefix: fleet.scope.prefix,
    });
    try {
      const name = fleet.name('off');
      // The tiny image never reports an address: the create waits (30 s at most).
      const created = await client.create({ host: 'h1', name, image: fleet.image, tag: 'wk' });
      await waitUntil(
        async () => {
          const progress = (await queue.getJob(created.jobId))?.progress as { phase?: string };
          return progress?.phase === 'address';
        },
        60_000,
        'the create to wait for the address',
      );
      await virsh(['destroy', name]);
      // Its host went down, say: the next run of the wait finds it off and starts it.
      const warned = await worker?.waitForLog(
        (l) =>
          l.msg ===
          'the instance went off while its create waited for the address; starting it again',
        30_000,
      );
      expect(warned).toMatchObject({ instance: `h1/${name}`, state: 'stopped' });
      await waitUntil(
        async () => (await virsh(['domstate', name])).trim() === 'running',
        30_000,
        `${name} to run again`,
      );
      // Still one job, still waiting: no result yet (the delete below supersedes it).
      expect(await queue.getJobState(created.jobId)).toMatch(/^(delayed|active|waiting)$/);
      const deleted = await client.delete(created.id);
      expect((await client.waitFor(deleted.jobId, { timeoutMs: 60_000 })).outcome).toBe(
        'succeeded',
      );
      expect(await fleet.domains()).not.toContain(name);
    } finally {
      await queue.close();
      await client.close();
    }
  }, 120_000);
});

describe('progress', () => {
  it("a create that fills the image cache reports the download's bytes, then its phases", async () => {
    const client = fleet.client(overrides);
    const queue = new Queue(hostQueueName('h1'), {
      connection: fleet.scope.redis,
      prefix: fleet.scope.prefix,
    });
    try {
      const queued = await client.create(
        { host: 'h1', name: fleet.name('prog'), image: 'slow' },
        { wait: false },
      );
      const seen: unknown[] = [];
      const done = client.waitFor(queued.jobId, { timeoutMs: 120_000 });
      let finished = false;
      void done.finally(() => (finished = true));
      while (!finished) {
        const job = await queue.getJob(queued.jobId);
        const last = seen.at(-1);
        if (job !== undefined && JSON.stringify(job.progress) !== JSON.stringify(last)) {
          seen.push(job.progress);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect((await done).outcome).toBe('succeeded');
      const downloads = seen.filter(
        (p): p is { phase: string; bytes: number; totalBytes: number } =>
          typeof p === 'object' && p !== null && 'bytes' in p,
      );
      expect(downloads.length).toBeGreaterThan(1);
      expect(
        downloads.every((p) => p.phase === 'download' && p.totalBytes === slowImage.length),
      ).toBe(true);
      expect(downloads.map((p) => p.bytes)).toEqual(
        [...downloads.map((p) => p.bytes)].sort((a, b) => a - b),
      );
      expect(seen).toContainEqual({ phase: 'boot' });
    } finally {
      await queue.close();
      await client.close();
    }
  }, 180_000);
});
