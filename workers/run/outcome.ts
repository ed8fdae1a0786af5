// What a processor decides for one run of a job, and how the runner carries it out: a final
// or per-attempt result (appended to the results stream), or a delayed re-queue that spends no
// attempt (busy key, address wait, a release at shutdown).
import type { JobResult, ResultOutcome } from '../../queues/results.js';
import type { Lease } from '../locks/redis-locks.js';

export type ResultFields = Omit<JobResult, 'jobId' | 'op' | 'outcome' | 'attempt' | 'timestamp'>;

export type Step =
  | {
      readonly type: 'result';
      readonly outcome: ResultOutcome;
      readonly fields: ResultFields;
      /** The instance lock, released by the runner in the same round trip as the result. */
      readonly lease?: Lease;
    }
  | { readonly type: 'delay'; readonly ms: number; readonly reason: DelayReason };

export type DelayReason = 'busy' | 'address' | 'shutdown';

export function succeeded(fields: ResultFields): Step {
  return { type: 'result', outcome: 'succeeded', fields };
}

export function superseded(fields: ResultFields, latest: number): Step {
  return {
    type: 'result',
    outcome: 'superseded',
    fields: {
      ...fields,
      message: `a newer request for this instance (generation ${latest}) was enqueued; nothing done`,
    },
  };
}

export function delay(ms: number, reason: DelayReason): Step {
  return { type: 'delay', ms, reason };
}

/** The first and the longest wait of a job that finds a key busy. */
export const BUSY_DELAY_MIN_MS = 200;
export const BUSY_DELAY_MAX_MS = 10_000;

/**
 * A busy key is retried after a quarter of the time the job has waited since it was enqueued,
 * from 0.2 s up to 10 s, jittered by half so waiters do not come back together. An instance
 * busy for a moment is retried at once; a create waiting out another's 20-minute image fill
 * comes back a few hundred times, not thousands.
 */
export function busyDelay(waitedMs: number): Step {
  const step = Math.min(BUSY_DELAY_MAX_MS, Math.max(BUSY_DELAY_MIN_MS, waitedMs / 4));
  return delay(Math.round(step / 2 + Math.random() * (step / 2)), 'busy');
}
