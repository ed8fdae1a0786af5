// "The latest request per instance wins" (SPEC §8). Every create or delete gets a generation
// when it is enqueued; a job whose generation is older than the instance's latest completes as
// `superseded` without touching the host. A repeat of the same create (same uid) yields the
// first job and its generation: it must never supersede the original.
//
// Two numbers per instance, each with a TTL refreshed when it is written:
//   <prefix>:gen-latest:<id>  the highest generation known to have a job: what "superseded"
//                             compares against, and what the next is raised above
//   <prefix>:gen-req:<id>     <prefix>:requests (one INCR counter of every allocation, no TTL)
//                             at the instance's last allocation: what GC compares against
// and one per create:
//   <prefix>:create:<uid>     hash { jobId, generation, digest, enqueued, instanceId,
//                             resultsFrom } for 7 days
//
// A create or delete is enqueued in one Lua script (queues/enqueue.ts): a create whose uid is
// reserved gets the reserved job back and nothing is written; otherwise take the request's
// place in the order of all requests as its generation (includes/next-generation.lua: never
// at or below an earlier one, even when the instance's keys lapsed under a waiting job),
// record it (gen-req), reserve the uid (a create), add the BullMQ job with the generation in
// its data and set gen-latest to it. One atomic step: no crash can leave a
// generation without its job or a job without its generation, and a job is superseded as soon
// as a newer one is in its queue. The worker commits again when a job starts (begin-job.lua or
// the completion that fetched it, complete-job.lua; a no-op for a job this client added, which
// refreshes gen-latest's TTL).
// BullMQ deduplication and reused job ids are never used to order commands.
import { createHash } from 'node:crypto';
import { createKey, latestGenerationKey, requestCounterKey } from './names.js';
import type { RedisConnection } from './redis.js';

export const CREATE_RESERVATION_TTL_S = 7 * 24 * 3600;
/** Longer than a job usually lives; one that waits longer still loses to a newer request
 *  (a generation is the request's place in a counter without TTL). */
export const GENERATION_TTL_S = 30 * 24 * 3600;

/** A stable digest of a create request, to tell a repeat from a uid reused for another one. */
export function requestDigest(request: Readonly<Record<string, unknown>>): string {
  const keys = Object.keys(request).sort();
  const canonical = JSON.stringify(keys.map((k) => [k, request[k]]));
  return createHash('sha256').update(canonical).digest('hex');
}

/**
 * How many requests (generation allocations) have been made so far: a request made after this
 * read gets a higher place in the order. Counts, not clocks: no clock step or skew between
 * Redis servers can put a later request before it.
 */
export async function requestCount(redis: RedisConnection, prefix: string): Promise<number> {
  return Number((await redis.get(requestCounterKey(prefix))) ?? '0');
}

/** The highest generation of this instance that has a job; 0 when none is known. */
export async function latestGeneration(
  redis: RedisConnection,
  prefix: string,
  instanceId: string,
): Promise<number> {
  const value = await redis.get(latestGenerationKey(prefix, instanceId));
  return value === null ? 0 : Number(value);
}

/** True when a newer create or delete of this instance has been enqueued. */
export async function isSuperseded(
  redis: RedisConnection,
  prefix: string,
  instanceId: string,
  generation: number,
): Promise<boolean> {
  return (await latestGeneration(redis, prefix, instanceId)) > generation;
}

/**
 * The generation of the create request that made `uid`, when its reservation says it was for
 * `instanceId`; undefined when there is no such record (a create made outside the queue, or one
 * whose reservation expired). A newer create of the instance replaces an older one's instance:
 * the last request wins.
 */
export async function createGeneration(
  redis: RedisConnection,
  prefix: string,
  uid: string,
  instanceId: string,
): Promise<number | undefined> {
  const [id, generation] = await redis.hmget(createKey(prefix, uid), 'instanceId', 'generation');
  if (id !== instanceId || generation === null || generation === undefined) return undefined;
  const n = Number(generation);
  return Number.isSafeInteger(n) ? n : undefined;
}
