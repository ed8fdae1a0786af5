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

/** A busy key is retried soon, spread so that waiters do not come back together. */
export function busyDelay(): Step {
  return delay(200 + Math.floor(Math.random() * 800), 'busy');
}
