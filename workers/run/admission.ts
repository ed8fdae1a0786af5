// The start of a create or delete in one Redis round trip (one Lua script, atomic): commit the
// job's generation, compare it with the instance's latest, and when it is still the latest take
// the instance lock. The three steps are the same as generations.ts commitGeneration, a
// comparison and RedisLocks.tryAcquire; done together they cost one round trip instead of three
// on the busiest path of a worker (bench/queue).
import type { Redis } from 'ioredis';
import { COMMIT_LUA, GENERATION_TTL_S } from '../../queues/generations.js';
import { createKey, latestGenerationKey } from '../../queues/names.js';
import { LuaScript } from '../../queues/script.js';
import { instanceLockName } from '../../src/provider/core/ids.js';
import type { Lease, RedisLocks } from '../locks/redis-locks.js';

// KEYS: latest-generation key, lock key, create reservation key (or the lock key again when
// there is none). ARGV: generation, generation TTL s, lock token, lock TTL ms, has reservation.
// Returns { latest, state } with state 'superseded', 'locked' or 'busy'.
const BEGIN = new LuaScript(`
local latestKey, gen, ttl = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local reservation = nil
if ARGV[5] == '1' then reservation = KEYS[3] end
${COMMIT_LUA}
if latest > gen then return { tostring(latest), 'superseded' } end
if redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4], 'NX') then
  return { tostring(latest), 'locked' }
end
return { tostring(latest), 'busy' }
`);

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

/** `run`: the job run's controller, which the lease aborts when the lock is lost. */
export async function beginInstanceJob(
  redis: Redis,
  locks: RedisLocks,
  args: BeginArgs,
  run: AbortController,
): Promise<Begun> {
  const lockName = instanceLockName(args.instanceId);
  const lockKey = locks.lockKey(lockName);
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
