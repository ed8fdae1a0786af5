// The start of a create or delete in one Redis round trip (queues/lua/begin-job.lua, atomic):
// commit the job's generation, compare it with the instance's latest, and when it is still the
// latest take the instance lock. The commit is the one kvm2's enqueue scripts make when they add
// the job (the include they share), here for a job added some other way; done together the
// three steps cost one round trip instead of three on the busiest path of a worker
// (bench/queue). A job that a completion fetched has begun in that completion already
// (workers/run/completion.ts): its run takes that begin when it is the one its data asks for.
import { beginHead } from '../../queues/enqueue.js';
import { GENERATION_TTL_S } from '../../queues/generations.js';
import { createKey, latestGenerationKey, lockKey as lockKeyOf } from '../../queues/names.js';
import { LuaScript } from '../../queues/script.js';
import { instanceLockName } from '../../src/provider/core/ids.js';
import type { Lease, RedisLocks } from '../locks/redis-locks.js';
import type { RedisConnection } from '../../queues/redis.js';
import { RELEASE_SCRIPT } from '../locks/scripts.js';
import { claimBegun, dropBegun, type CompletionBegun } from './completion.js';

const BEGIN = LuaScript.load('begin-job');

export type Begun =
  | { readonly state: 'superseded'; readonly latest: number }
  | { readonly state: 'busy'; readonly latest: number }
  | { readonly state: 'locked'; readonly latest: number; readonly lease: Lease };

export interface BeginArgs {
  readonly prefix: string;
  readonly instanceId: string;
  readonly generation: number;
  /** A create's uid: its reservation is marked enqueued (generations.ts, step 3). */
  readonly uid?: string | undefined;
}

/**
 * `run`: the job run's controller, which the lease aborts when the lock is lost. `jobId`: the
 * job's, whose begin a completion may have made.
 */
export async function beginInstanceJob(
  redis: RedisConnection,
  locks: RedisLocks,
  args: BeginArgs,
  run: AbortController,
  jobId?: string,
): Promise<Begun> {
  const lockName = instanceLockName(args.instanceId);
  const lockKey = locks.lockKey(lockName);
  const made = claimBegun(jobId);
  if (made !== undefined) {
    // The begin its enqueue wrote for it, for the job's data as validated: the same keys and
    // generation begin-job.lua would be given. Anything else (a hash edited by hand) is undone.
    const expected = `${beginHead(args.prefix, args.instanceId, args.uid)}${args.generation}}`;
    if (made.begin === expected && lockKey === lockKeyOf(args.prefix, lockName)) {
      if (made.state !== 'locked') return { state: made.state, latest: made.latest };
      const lease = locks.adopt(lockName, made.token, made.sentAt, run);
      return { state: 'locked', latest: made.latest, lease };
    }
    await release(redis, made);
  }
  const token = locks.newToken();
  const keys = [
    latestGenerationKey(args.prefix, args.instanceId),
    lockKey,
    args.uid === undefined ? lockKey : createKey(args.prefix, args.uid),
  ];
  const argv = [
    args.generation,
    GENERATION_TTL_S,
    token,
    locks.ttlMs,
    args.uid === undefined ? '0' : '1',
  ];
  const sentAt = performance.now();
  const [latestText, state] = (await BEGIN.run(redis, keys, argv)) as [string, string];
  const latest = Number(latestText);
  if (state === 'locked') {
    return { state, latest, lease: locks.adopt(lockName, token, sentAt, run) };
  }
  return { state: state === 'superseded' ? 'superseded' : 'busy', latest };
}

/** The lock key a completion's begin names; undefined when its begin cannot be read. */
function lockOf(made: CompletionBegun): string | undefined {
  try {
    const lock = (JSON.parse(made.begin) as { lock?: unknown }).lock;
    return typeof lock === 'string' ? lock : undefined;
  } catch {
    return undefined;
  }
}

/** Releases a completion's begin's lock, if it took one (only while it holds the token). */
async function release(redis: RedisConnection, made: CompletionBegun): Promise<void> {
  const lock = made.state === 'locked' ? lockOf(made) : undefined;
  if (lock !== undefined) await RELEASE_SCRIPT.run(redis, [lock], [made.token]);
}

/**
 * At the end of job `jobId`'s run: a begin a completion made for it that the run did not take
 * (the run ended before its begin: a result written earlier, data refused) gives its lock back;
 * undefined when there was none.
 */
export function releaseUnclaimedBegin(
  redis: RedisConnection,
  jobId: string | undefined,
): Promise<void> | undefined {
  const made = dropBegun(jobId);
  // Nothing left (the usual end): no promise made, on every job's path.
  return made === undefined ? undefined : release(redis, made);
}
