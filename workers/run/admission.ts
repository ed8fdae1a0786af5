// The start of a create or delete in one Redis round trip (queues/lua/begin-job.lua, atomic):
// commit the job's generation, compare it with the instance's latest, and when it is still the
// latest take the instance lock. The commit is the one kvm2's enqueue scripts make when they add
// the job (the include they share), here for a job added some other way; done together the
// three steps cost one round trip instead of three on the busiest path of a worker
// (bench/queue).
import { GENERATION_TTL_S } from '../../queues/generations.js';
import { createKey, latestGenerationKey } from '../../queues/names.js';
import { LuaScript } from '../../queues/script.js';
import { instanceLockName } from '../../src/provider/core/ids.js';
import type { Lease, RedisLocks } from '../locks/redis-locks.js';
import type { RedisConnection } from '../../queues/redis.js';

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

/** `run`: the job run's controller, which the lease aborts when the lock is lost. */
export async function beginInstanceJob(
  redis: RedisConnection,
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
