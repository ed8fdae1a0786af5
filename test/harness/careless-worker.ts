// A worker that is not kvm2's: it takes one job of a host queue and fails it the way a careless
// worker might, quoting the job's user-data in its error and logs. The board's tests use it to
// put secrets where only the board's scrubbing stands between them and the page.
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { hostQueueName } from '../../queues/names.js';
import type { RedisScope } from './redis.js';

export type CreateJob = Job<{ userData: string }>;

/** Runs until one job of host.<host> has failed with what `fail` throws. */
export async function failOneJob(
  scope: RedisScope,
  host: string,
  fail: (job: CreateJob) => Promise<never>,
): Promise<void> {
  const connection = new Redis(scope.url, { maxRetriesPerRequest: null });
  const worker = new Worker(hostQueueName(host), fail, {
    connection,
    prefix: scope.prefix,
    autorun: false,
  });
  const done = new Promise<void>((resolve) => worker.once('failed', () => resolve()));
  void worker.run();
  try {
    await done;
  } finally {
    await worker.close();
    await connection.quit();
  }
}
