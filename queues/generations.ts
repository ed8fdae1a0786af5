// "The latest request per instance wins" (SPEC §8). Every create or delete gets a generation
// when it is enqueued; a job whose generation is older than the instance's latest completes as
// `superseded` without touching the host. A repeat of the same create (same uid) yields the
// first job and its generation: it must never supersede the original.
//
// Three numbers per instance, each with a TTL refreshed when it is written:
//   <prefix>:gen:<id>         INCR: allocates generations
//   <prefix>:gen-latest:<id>  the highest generation known to have a job: what "superseded"
//                             compares against
//   <prefix>:gen-req:<id>     <prefix>:requests (one INCR counter of every allocation, no TTL)
//                             at the instance's last allocation: what GC compares against
// and one per create:
//   <prefix>:create:<uid>     hash { jobId, generation, digest, enqueued, instanceId,
//                             resultsFrom } for 7 days
//
// The order, and what a crash at each point leaves (docs/results.md, "Generations"):
//   1. reserve (one Lua script): a create whose uid is reserved gets the reserved job id and
//      generation back and allocates nothing; otherwise INCR the counter, record the request's
//      place (gen-req) and the reservation (enqueued = 0). Atomic, so two racing repeats get
//      the same answer. (A delete's step 1 is the same allocation, without a reservation.)
//   2. add the job to BullMQ with that job id and generation in its data.
//   3. commit (one Lua script): gen-latest = max(gen-latest, generation); mark the
//      reservation enqueued.
// Crash after 1: the generation was allocated but never committed, so it supersedes nothing.
// A repeat of the create finds the reservation not enqueued and redoes 2 and 3 with the same
// job id (BullMQ adds a job id once) and generation. Crash after 2: the job exists; a repeat
// commits; without one, the worker commits when the job starts (commitGeneration), and until
// then the older jobs still run before it: the last request still wins.
// BullMQ deduplication and reused job ids are never used to order commands; the reused job id
// in the repeat path only makes "add the same command twice" idempotent.
import { createHash } from 'node:crypto';
import {
  createKey,
  generationKey,
  lastRequestKey,
  latestGenerationKey,
  requestCounterKey,
  resultsKey,
} from './names.js';
import { LuaScript } from './script.js';
import type { RedisConnection } from './redis.js';

export const CREATE_RESERVATION_TTL_S = 7 * 24 * 3600;
/** Longer than any job lives (attempts × backoff, retention): a counter never restarts under one. */
export const GENERATION_TTL_S = 30 * 24 * 3600;

// queues/lua/: reserve-create.lua, allocate-generation.lua and commit-generation.lua; the
// first two share includes/next-generation.lua, the last includes/commit-generation.lua with
// the worker's begin-job.lua.
const RESERVE_CREATE = LuaScript.load('reserve-create');
const ALLOCATE = LuaScript.load('allocate-generation');
const COMMIT = LuaScript.load('commit-generation');

export interface CreateReservation {
  readonly jobId: string;
  readonly generation: number;
  /** False when this uid was reserved before: a repeat of the same create. */
  readonly fresh: boolean;
  /** True when the job is known to be in its queue (a repeat need not add it again). */
  readonly enqueued: boolean;
  /** The digest the uid was first reserved with: a different one means a reused uid. */
  readonly digest: string;
  /** The results stream's last id before this reservation: where a waitFor starts. */
  readonly resultsFrom: string;
  /** The instance the uid was first reserved for (a zone request may place a repeat elsewhere). */
  readonly instanceId: string;
}

function toArray(reply: unknown): string[] {
  if (!Array.isArray(reply)) throw new TypeError('unexpected reply from a kvm2 script');
  return reply.map(String);
}

/** A stable digest of a create request, to tell a repeat from a uid reused for another one. */
export function requestDigest(request: Readonly<Record<string, unknown>>): string {
  const keys = Object.keys(request).sort();
  const canonical = JSON.stringify(keys.map((k) => [k, request[k]]));
  return createHash('sha256').update(canonical).digest('hex');
}

/** Step 1 for a create: reserve (or find) the uid's job id and generation. */
export async function reserveCreate(
  redis: RedisConnection,
  prefix: string,
  args: {
    readonly instanceId: string;
    readonly uid: string;
    readonly jobId: string;
    readonly digest: string;
  },
): Promise<CreateReservation> {
  const reply = toArray(
    await RESERVE_CREATE.run(
      redis,
      [
        createKey(prefix, args.uid),
        generationKey(prefix, args.instanceId),
        resultsKey(prefix),
        latestGenerationKey(prefix, args.instanceId),
        lastRequestKey(prefix, args.instanceId),
        requestCounterKey(prefix),
      ],
      [args.jobId, args.digest, CREATE_RESERVATION_TTL_S, GENERATION_TTL_S, args.instanceId],
    ),
  );
  const [jobId = '', generation = '', digest = '', enqueued = '0', fresh = '0'] = reply;
  const [, , , , , from = '0-0', instanceId = args.instanceId] = reply;
  return {
    jobId,
    generation: Number(generation),
    digest,
    enqueued: enqueued === '1',
    fresh: fresh === '1',
    resultsFrom: from,
    instanceId,
  };
}

/**
 * Step 1 for a delete: a new generation (and the results stream's last id). With
 * `unrequestedSince` (a requestCount), only while the instance's last request came no later
 * than that count (GC: no request for the instance since it began looking); undefined
 * otherwise, and nothing is allocated.
 */
export async function allocateGeneration(
  redis: RedisConnection,
  prefix: string,
  instanceId: string,
  unrequestedSince?: number,
): Promise<{ readonly generation: number; readonly resultsFrom: string } | undefined> {
  const [generation = '', from = '0-0', requested] = toArray(
    await ALLOCATE.run(
      redis,
      [
        generationKey(prefix, instanceId),
        resultsKey(prefix),
        latestGenerationKey(prefix, instanceId),
        lastRequestKey(prefix, instanceId),
        requestCounterKey(prefix),
      ],
      [GENERATION_TTL_S, unrequestedSince === undefined ? '' : String(unrequestedSince)],
    ),
  );
  if (requested !== undefined) return undefined;
  return { generation: Number(generation), resultsFrom: from };
}

/**
 * How many requests (generation allocations) have been made so far: a request made after this
 * read gets a higher place in the order. Counts, not clocks: no clock step or skew between
 * Redis servers can put a later request before it.
 */
export async function requestCount(redis: RedisConnection, prefix: string): Promise<number> {
  return Number((await redis.get(requestCounterKey(prefix))) ?? '0');
}

/**
 * Step 3 (producer, after the job is added) and the worker's first step when a job starts:
 * record that `generation` has a job, and say whether a newer one already does.
 */
export async function commitGeneration(
  redis: RedisConnection,
  prefix: string,
  instanceId: string,
  generation: number,
  uid?: string,
): Promise<{ readonly latest: number; readonly superseded: boolean }> {
  const keys =
    uid === undefined
      ? [latestGenerationKey(prefix, instanceId)]
      : [latestGenerationKey(prefix, instanceId), createKey(prefix, uid)];
  const latest = Number(await COMMIT.run(redis, keys, [generation, GENERATION_TTL_S]));
  return { latest, superseded: latest > generation };
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
