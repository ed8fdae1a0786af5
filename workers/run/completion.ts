// A run that completes its job does it in one round trip, as a bare BullMQ worker does: the
// instance lock released, the result appended (a final one once per attempt), BullMQ's
// moveToFinished, and the begin of the job BullMQ fetched next, in one script
// (queues/lua/complete-job.lua around the installed BullMQ's own moveToFinished text). Before,
// the result and lock were a round trip of their own in the job's slot, and each job's begin
// another: a busy host's queue ran that many fewer jobs a second (docs/benchmarks.md, #20).
//
// BullMQ's worker completes a job through its backend's moveToCompleted; the workers kvm2 makes
// get a backend (BullMQ's own Redis one) whose moveToCompleted runs the combined script when the
// run left an ending for its job (`endWithCompletion`), and BullMQ's when it did not (a run that
// ends with a result written earlier). Everything else about the job's end (keeping or removing
// it, its events, metrics, fetching the next job) is BullMQ's script, unchanged. The begin of
// the job fetched waits here for its run (`claimBegun`, workers/run/admission.ts); a run that
// does not claim it releases its lock at its end (`dropBegun`).
import { performance } from 'node:perf_hooks';
import {
  createRedisBackend,
  raw2NextJobData,
  type BackendFactory,
  type RedisQueueBackend,
} from 'bullmq';
import { moveToFinished } from 'bullmq/dist/esm/scripts/moveToFinished-14.js';
import { GENERATION_TTL_S } from '../../queues/generations.js';
import type { RedisConnection } from '../../queues/redis.js';
import type { ResultEnding } from '../../queues/results.js';
import { LuaScript } from '../../queues/script.js';

/** moveToFinished's key count: complete-job.lua's own keys start after them. */
const BULLMQ_KEYS = 14;
const BULLMQ_MARKER = /^--- @bullmq moveToFinished$/m;

if (moveToFinished.keys !== BULLMQ_KEYS) {
  // package.json pins BullMQ; an upgrade that changes the script's keys must change this file.
  throw new Error(
    `BullMQ's moveToFinished takes ${moveToFinished.keys} keys; complete-job.lua is written for ${BULLMQ_KEYS}`,
  );
}

function completeJobScript(): LuaScript {
  const kvm2 = LuaScript.load('complete-job').lua;
  if (!BULLMQ_MARKER.test(kvm2)) throw new Error('complete-job.lua lacks its @bullmq line');
  const wrapped = `local function bullmqMoveToFinished()\n${moveToFinished.content}\nend`;
  return new LuaScript(kvm2.replace(BULLMQ_MARKER, () => wrapped));
}

const COMPLETE_JOB = completeJobScript();

/**
 * The ending a run left on its job, until BullMQ completes the job with it: a property of the
 * job object under a symbol of ours (JSON and BullMQ's own reads never see it), not a WeakMap
 * entry, which cost the completion ~5 µs a job and the collector its ephemerons.
 */
const ENDING = Symbol('kvm2.ending');

type WithEnding = { [ENDING]?: ResultEnding | undefined };

/**
 * The run's result and lock release, written when BullMQ completes `job` (the processor has
 * returned). Kept until the completion lands: BullMQ calls it again after a lost connection,
 * and the script appends a final result once per attempt.
 */
export function endWithCompletion(job: object, ending: ResultEnding): void {
  (job as WithEnding)[ENDING] = ending;
}

/** A job's begin, made by the completion that fetched it (complete-job.lua). */
export interface CompletionBegun {
  readonly state: 'superseded' | 'busy' | 'locked';
  readonly latest: number;
  /** The lock's token (a lock is held only in state 'locked'). */
  readonly token: string;
  /** The job's `kvm2Begin`, as it was begun: checked against the job's data. */
  readonly begin: string;
  /** performance.now() when the completion was sent: the lock's TTL counts from there. */
  readonly sentAt: number;
}

/** Begins made by completions, by job id, until the job's run claims or drops them. */
const begun = new Map<string, CompletionBegun>();

/** The begin the completion that fetched job `jobId` made for it; taken once. */
export function claimBegun(jobId: string | undefined): CompletionBegun | undefined {
  if (jobId === undefined) return undefined;
  const found = begun.get(jobId);
  begun.delete(jobId);
  return found;
}

/** What the run of `jobId` left unclaimed (its lock, to release), at the run's end. */
export const dropBegun = claimBegun;

export interface CompletionOptions {
  /** The instance locks' TTL (RedisLocks.ttlMs) and a fresh token for each begin. */
  readonly lockTtlMs: number;
  readonly newToken: () => string;
}

/** BullMQ's Redis backend, its completion carrying the run's ending; `redis` runs the script. */
export function completingBackend(
  redis: RedisConnection,
  options: CompletionOptions,
): BackendFactory<RedisQueueBackend> {
  return (name, opts, flags) => {
    const backend = createRedisBackend(name, opts, flags);
    const bullmqCompletion = backend.moveToCompleted.bind(backend);
    backend.moveToCompleted = async (job, returnValue, removeOnComplete, token, fetchNext) => {
      const ending = (job as WithEnding)[ENDING];
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
      // One array, keys then arguments, as EVALSHA takes them: BullMQ's keys, the ending's, then
      // BullMQ's arguments (ioredis sends an absent one as ''; BullMQ's script reads '' as
      // "none"), the next job's begin and the ending's (bench/queue's profile: the copies this
      // replaced cost ~4 µs a job).
      const flat: (string | number | Buffer)[] = bullmq.slice(0, BULLMQ_KEYS) as string[];
      flat.push(...ending.keys);
      for (let i = BULLMQ_KEYS; i < bullmq.length; i++) {
        flat.push((bullmq[i] ?? '') as string | number | Buffer);
      }
      const nextToken = fetchNext ? options.newToken() : '';
      flat.push(nextToken, options.lockTtlMs, GENERATION_TTL_S, ...ending.args);
      const sentAt = performance.now();
      const raw = await COMPLETE_JOB.runFlat(redis, BULLMQ_KEYS + ending.keys.length, flat);
      if (typeof raw === 'number' && raw < 0) {
        throw backend.finishedErrors({
          code: raw,
          ...(job.id === undefined ? {} : { jobId: job.id }),
          command: 'moveToFinished',
          state: 'active',
        });
      }
      (job as WithEnding)[ENDING] = undefined;
      const next = raw as unknown[];
      if (Array.isArray(next) && next[5] !== undefined) keepBegun(next, nextToken, sentAt);
      return { result: raw2NextJobData(next), finishedOn: Number(bullmq[BULLMQ_KEYS + 1]) };
    };
    return backend;
  };
}

/** More begins than any worker's runs in flight: the oldest go (their locks lapse by TTL). */
const BEGUN_MAX = 10_000;

function fieldOf(fields: readonly unknown[], name: string): unknown {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

function keepBegun(raw: readonly unknown[], token: string, sentAt: number): void {
  const [fields, jobId, , , latest, state] = raw;
  if (typeof jobId !== 'string') return;
  if (state !== 'superseded' && state !== 'busy' && state !== 'locked') return;
  const begin = Array.isArray(fields) ? fieldOf(fields, 'kvm2Begin') : undefined;
  if (begun.size >= BEGUN_MAX) begun.delete(begun.keys().next().value ?? '');
  // An unreadable begin is kept too: the run finds it does not match, and releases its lock.
  const text = typeof begin === 'string' ? begin : '';
  begun.set(jobId, { state, latest: Number(latest), token, begin: text, sentAt });
}
