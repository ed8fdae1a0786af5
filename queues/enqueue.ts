// The steps of enqueueing a delete, shared by the client library and GC (which deletes through
// the per-host queues like any upstream app): allocate a generation, add the job, commit the
// generation. generations.ts explains the order and what a crash at each step leaves.
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { parseInstanceId } from '../src/provider/core/ids.js';
import { DEFAULT_JOB_OPTIONS } from './job-options.js';
import { allocateGeneration, commitGeneration } from './generations.js';
import { hostQueueName } from './names.js';
import { validateJob, type JobData, type TraceContext } from './registry.js';
import type { RedisConnection } from './redis.js';

export interface EnqueuedDelete {
  readonly jobId: string;
  readonly generation: number;
  /** The results stream's last id before the enqueue: where a wait for this job reads from. */
  readonly resultsFrom: string;
}

/**
 * A delete's data, validated (a permanent Kvm2Error naming the field otherwise), before
 * anything reaches Redis. Its generation is a placeholder that enqueueDelete replaces.
 */
export function deleteData(id: string, traceContext?: TraceContext): JobData<'delete'> {
  return validateJob('delete', {
    id,
    generation: 1,
    ...(traceContext === undefined ? {} : { traceContext }),
  });
}

/**
 * Enqueues a delete (deleteData's) on its host's queue; `queueFor` gives a queue by name. With
 * `unrequestedSince` (a requestCount), only while no request for the instance was made after
 * that count was read: undefined, and nothing enqueued, when one was (generations.ts).
 */
export async function enqueueDelete(
  redis: RedisConnection,
  prefix: string,
  queueFor: (name: string) => Queue,
  data: JobData<'delete'>,
  options: { readonly unrequestedSince?: number } = {},
): Promise<EnqueuedDelete | undefined> {
  const { host } = parseInstanceId(data.id);
  const allocated = await allocateGeneration(redis, prefix, data.id, options.unrequestedSince);
  if (allocated === undefined) return undefined;
  const { generation, resultsFrom } = allocated;
  const jobId = randomUUID();
  await queueFor(hostQueueName(host)).add(
    'delete',
    { ...data, generation },
    { ...DEFAULT_JOB_OPTIONS.delete, jobId },
  );
  await commitGeneration(redis, prefix, data.id, generation);
  return { jobId, generation, resultsFrom };
}
