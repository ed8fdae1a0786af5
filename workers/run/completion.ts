// A run that completes its job writes its result in BullMQ's completion, one round trip: the
// instance lock released, the result appended (a final one once per attempt) and BullMQ's
// moveToFinished, in one script (queues/lua/complete-job.lua, followed by the installed
// BullMQ's own moveToFinished text). Before, the result and the lock were a round trip of their
// own in the job's slot, ahead of BullMQ's; a busy host's queue ran that many fewer jobs a
// second (docs/benchmarks.md, #20).
//
// BullMQ's worker completes a job through its backend's moveToCompleted; the workers kvm2 makes
// get a backend (BullMQ's own Redis one) whose moveToCompleted runs the combined script when the
// run left an ending for its job (`endWithCompletion`), and BullMQ's when it did not (a run that
// ends with a result written earlier). Everything else about the job's end (keeping or removing
// it, its events, metrics, fetching the next job) is BullMQ's script, unchanged.
import {
  createRedisBackend,
  raw2NextJobData,
  type BackendFactory,
  type RedisQueueBackend,
} from 'bullmq';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import type { RedisConnection } from '../../queues/redis.js';
import type { ResultEnding } from '../../queues/results.js';
import { LuaScript } from '../../queues/script.js';

/** moveToFinished's key count: complete-job.lua's own keys start after them. */
const BULLMQ_KEYS = 14;

if (moveToFinished.keys !== BULLMQ_KEYS) {
  // package.json pins BullMQ; an upgrade that changes the script's keys must change this file.
  throw new Error(
    `BullMQ's moveToFinished takes ${moveToFinished.keys} keys; complete-job.lua is written for ${BULLMQ_KEYS}`,
  );
}

const COMPLETE_JOB = new LuaScript(
  `${LuaScript.load('complete-job').lua}\n${moveToFinished.content}`,
);

/** The ending each run left for its job, until BullMQ completes the job with it. */
const endings = new WeakMap<object, ResultEnding>();

/**
 * The run's result and lock release, written when BullMQ completes `job` (the processor has
 * returned). Kept until the completion lands: BullMQ calls it again after a lost connection,
 * and the script appends a final result once per attempt.
 */
export function endWithCompletion(job: object, ending: ResultEnding): void {
  endings.set(job, ending);
}

/** BullMQ's Redis backend, its completion carrying the run's ending; `redis` runs the script. */
export function completingBackend(redis: RedisConnection): BackendFactory<RedisQueueBackend> {
  return (name, opts, flags) => {
    const backend = createRedisBackend(name, opts, flags);
    const bullmqCompletion = backend.moveToCompleted.bind(backend);
    backend.moveToCompleted = async (job, returnValue, removeOnComplete, token, fetchNext) => {
      const ending = endings.get(job);
      if (ending === undefined) {
        return bullmqCompletion(job, returnValue, removeOnComplete, token, fetchNext);
      }
      const bullmq = backend.moveToCompletedArgs(
        job,
        // BullMQ's own completion passes the value stringified, as the script stores it.
        JSON.stringify(returnValue) as typeof returnValue,
        removeOnComplete,
        token,
        fetchNext,
      );
      // ioredis sends an absent argument as ''; BullMQ's script reads '' as "none".
      const argv = bullmq.slice(BULLMQ_KEYS).map((a) => a ?? '');
      const raw = await COMPLETE_JOB.run(
        redis,
        [...(bullmq.slice(0, BULLMQ_KEYS) as string[]), ...ending.keys],
        [...(argv as (string | number | Buffer)[]), ...ending.args],
      );
      if (typeof raw === 'number' && raw < 0) {
        throw backend.finishedErrors({
          code: raw,
          ...(job.id === undefined ? {} : { jobId: job.id }),
          command: 'moveToFinished',
          state: 'active',
        });
      }
      endings.delete(job);
      return {
        result: raw2NextJobData(raw as unknown[]),
        finishedOn: Number(argv[1]),
      };
    };
    return backend;
  };
}
