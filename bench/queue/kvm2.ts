// The kvm2 side: a worker (startWorker, in this process) serving one host on libvirt's test
// driver, fed by Kvm2Client.delete of distinct absent instances.
import { Queue } from 'bullmq';
import pino from 'pino';
import { Kvm2Client } from '../../queues/client.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { redisScope, REDIS_URL } from '../../test/harness/redis.js';
import type { Sshd } from '../../test/harness/sshd.js';
import type { JobReturn } from '../../workers/runner.js';
import { createLogger } from '../../workers/logger.js';
import { startWorker } from '../../workers/runtime.js';
import { byComm, sessionsOf } from './proc-cpu.js';
import { measure, observerConnection, QUEUE, testDriverHost, type Round } from './round.js';

export async function kvm2Round(jobs: number, sshd: Sshd): Promise<Round> {
  const scope = await redisScope('bq-kvm2');
  const config = parseConfig({
    redis: { url: REDIS_URL, prefix: scope.prefix },
    hosts: [testDriverHost(sshd)],
    // One health check at start, then hourly: none runs inside the timed burst.
    health: { every: '1h' },
  });
  // The worker's own logger (redacting, as workers/process.ts makes it), at warn: a run's
  // context costs what it costs in production.
  const logger = createLogger({
    name: 'kvm2-worker',
    level: 'warn',
    destination: pino.destination(2),
  });
  const runtime = await startWorker(config, { logger });
  const client = new Kvm2Client({ redisUrl: REDIS_URL, prefix: scope.prefix });
  const observerConn = observerConnection();
  const observer = new Queue(QUEUE, { connection: observerConn, prefix: scope.prefix });
  try {
    // Warm: the worker's SSH connection to libvirtd is up, BullMQ's and kvm2's scripts loaded.
    const warm = await client.delete('h1/bq-warm');
    await client.waitFor(warm.jobId, { timeoutMs: 30_000 });
    return await measure(
      jobs,
      observer,
      1,
      async (i) => (await client.delete(`h1/bq-${i}`)).jobId,
      (job) => {
        const result = job.returnvalue as JobReturn | undefined;
        if (result?.outcome !== 'succeeded' || result.state !== 'deleted') {
          throw new Error(`kvm2 job ${job.id}: ${JSON.stringify(result)}`);
        }
      },
      { redis: byComm('redis-server'), sshd: sessionsOf(sshd), libvirtd: byComm('libvirtd') },
    );
  } finally {
    await client.close();
    await runtime.close();
    await observer.close();
    observerConn.disconnect();
    await scope.cleanup();
  }
}
