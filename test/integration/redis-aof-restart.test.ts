// Redis killed in the middle of a create (issue #15): a standalone redis-server with AOF on
// (fsync always), a real `kvm2 worker`, the real libvirtd through sshd. The create is held
// inside its image download (the image server stalls it); Redis gets SIGKILL there and is
// started again, replaying its AOF; the download is let go. The job finishes after Redis is
// back, at its first attempt or a retry, with one domain and no leaked volume.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { hostQueueName } from '../../queues/names.js';
import { FINAL_OUTCOMES } from '../../queues/results.js';
import { stallingImage, type StallingImage } from '../harness/fault-kit.js';
import { poolVolumes } from '../harness/libvirt-objects.js';
import { startQueueFleet, type QueueFleet } from '../harness/queue-fleet.js';
import { startAofRedis, type AofRedis } from '../harness/redis-aof.js';
import { allResults } from '../harness/results.js';
import { virsh } from '../harness/virsh.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

let redisServer: AofRedis;
let fleet: QueueFleet;
let image: StallingImage;
let worker: WorkerProcess | undefined;
let client: Kvm2Client;
let overrides: Record<string, unknown> = {};

beforeAll(async () => {
  redisServer = await startAofRedis();
  fleet = await startQueueFleet('aof');
  image = await stallingImage(fleet, 'aof-stall');
  overrides = {
    redis: { url: redisServer.url, prefix: fleet.scope.prefix },
    images: {
      ...(fleet.configObject()['images'] as Record<string, unknown>),
      [image.name]: image.config,
    },
  };
  worker = await startWorkerProcess(fleet.writeConfig(overrides));
  client = fleet.client(overrides);
}, 120_000);

afterAll(async () => {
  image?.release();
  await client?.close();
  await worker?.stop();
  await fleet?.cleanup();
  for (const vol of [image?.baseVolume, image?.markerVolume]) {
    if (vol !== undefined) await virsh(['vol-delete', '--pool', 'default', vol]).catch(() => 0);
  }
  await redisServer?.stop();
}, 120_000);

describe('Redis SIGKILLed and restarted in the middle of a create', () => {
  it('the job finishes once Redis is back: one domain, no leaked volume', async () => {
    const name = fleet.name('aof');
    const job = await client.create(
      { host: 'h1', name, image: image.name, tag: 'aof', userData: '#cloud-config\n' },
      { wait: false },
    );
    await image.reached; // the worker is inside the download, holding the instance lock
    const killedAt = Date.now();
    await redisServer.kill();
    await new Promise((r) => setTimeout(r, 1_000));
    await redisServer.restart();
    image.release();

    const result = await client.waitFor(job.jobId, { timeoutMs: 180_000 });
    process.stdout.write(
      `[redis-aof] SIGKILL → final result ${result.outcome} (attempt ${result.attempt}): ${Date.now() - killedAt} ms\n`,
    );
    expect(result).toMatchObject({ outcome: 'succeeded', op: 'create', instanceId: `h1/${name}` });

    expect(await fleet.domains()).toEqual([name]);
    expect((await virsh(['domstate', name])).trim()).toBe('running');
    expect(await fleet.volumes()).toEqual([`kvm2-${name}-seed.iso`, `kvm2-${name}.qcow2`]);
    expect((await poolVolumes()).filter((v) => v.startsWith(image.baseVolume))).toEqual([
      image.baseVolume,
      image.markerVolume,
    ]);

    const redis = new Redis(redisServer.url);
    try {
      const queue = new Queue(hostQueueName('h1'), {
        connection: redis,
        prefix: fleet.scope.prefix,
      });
      try {
        expect(await queue.getJobState(job.jobId)).toBe('completed');
        const counts = await queue.getJobCounts('active', 'wait', 'delayed');
        expect(counts).toEqual({ active: 0, wait: 0, delayed: 0 });
      } finally {
        await queue.close();
      }
      const finals = (await allResults(redis, fleet.scope.prefix)).filter(
        (r) => r.jobId === job.jobId && FINAL_OUTCOMES.has(r.outcome),
      );
      expect(finals.map((r) => r.outcome)).toEqual(['succeeded']);
    } finally {
      redis.disconnect();
    }
  }, 300_000);
});
