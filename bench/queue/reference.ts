// The reference sides: a plain BullMQ Queue and Worker with kvm2's concurrency, whose processor
// makes kvm2's libvirt calls for the job's instance (same) or returns at once (empty).
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { parseConfig } from '../../src/provider/config/load.js';
import { Provider } from '../../src/provider/provider.js';
import { redisScope, REDIS_URL } from '../../test/harness/redis.js';
import type { Sshd } from '../../test/harness/sshd.js';
import { CONCURRENCY } from './args.js';
import { byComm, sessionsOf } from './proc-cpu.js';
import {
  bareConnection,
  drained,
  measure,
  observerConnection,
  QUEUE,
  RETENTION,
  testDriverHost,
  type Round,
} from './round.js';

/** Bare BullMQ; with `sshd`, each job makes kvm2's libvirt calls for its instance. */
export async function bareRound(jobs: number, sshd?: Sshd): Promise<Round> {
  const scope = await redisScope(sshd === undefined ? 'bq-bare' : 'bq-libvirt');
  const provider =
    sshd === undefined ? undefined : new Provider(parseConfig({ hosts: [testDriverHost(sshd)] }));
  const producerConn = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const workerConn = bareConnection();
  const observerConn = observerConnection();
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
