// The steps of enqueueing a delete, shared by the client library and GC (which deletes through
// the per-host queues like any upstream app): allocate a generation, add the job, commit the
// generation. generations.ts explains the order and what a crash at each step leaves.
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { parseInstanceId } from '../src/provider/ids.js';
import { DEFAULT_JOB_OPTIONS } from './job-options.js';
import { allocateGeneration, commitGeneration } from './generations.js';
import { hostQueueName } from './names.js';
import { validateJob, type TraceContext } from './registry.js';

export interface EnqueuedDelete {
  readonly jobId: string;
  readonly generation: number;
  /** The results stream's last id before the enqueue: where a wait for this job reads from. */
  readonly resultsFrom: string;
}

/**
 * Enqueues a delete of `id` on its host's queue. `queueFor` gives the (cached) queue of a name.
 * Throws a permanent QueueError for a malformed id, before anything reaches Redis.
 */
export async function enqueueDelete(
  redis: Redis,
  prefix: string,
  queueFor: (name: string) => Queue,
  id: string,
  traceContext?: TraceContext,
): Promise<EnqueuedDelete> {
  const data = validateJob('delete', {
    id,
    generation: 1, // a placeholder that passes validation; the real one replaces it
    ...(traceContext === undefined ? {} : { traceContext }),
  });
  const { host } = parseInstanceId(data.id);
  const { generation, resultsFrom } = await allocateGeneration(redis, prefix, data.id);
  const jobId = randomUUID();
  await queueFor(hostQueueName(host)).add(
    'delete',
    { ...data, generation },
    { ...DEFAULT_JOB_OPTIONS.delete, jobId },
  );
  await commitGeneration(redis, prefix, data.id, generation);
  return { jobId, generation, resultsFrom };
}
