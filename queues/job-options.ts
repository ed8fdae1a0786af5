// BullMQ options of each kvm2 job: attempts, backoff and retention. Producers (the client and
// GC) add jobs with them; the worker reads `attempts` back from the job itself.
import type { JobsOptions } from 'bullmq';
import type { JobName } from './registry.js';

const HOUR_S = 3600;

/** Finished jobs are kept for a bounded age and count: Redis must not grow without end. */
export const RETENTION = {
  removeOnComplete: { age: 24 * HOUR_S, count: 10_000 },
  removeOnFail: { age: 7 * 24 * HOUR_S, count: 50_000 },
} as const satisfies JobsOptions;

/** Transient failures retry with exponential backoff: nominal 2 s, 4 s, 8 s, 16 s; jitter 0.5 takes
 *  each between half of it and all of it (BullMQ Backoffs.calculate; docs/jobs.md, "Options"). */
export const DEFAULT_JOB_OPTIONS: Readonly<Record<JobName, JobsOptions>> = Object.freeze({
  create: {
    ...RETENTION,
    attempts: 5,
    backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 },
  },
  delete: {
    ...RETENTION,
    attempts: 5,
    backoff: { type: 'exponential', delay: 2_000, jitter: 0.5 },
  },
  get: { ...RETENTION, attempts: 3, backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 } },
  gc: { ...RETENTION, attempts: 3, backoff: { type: 'exponential', delay: 5_000, jitter: 0.5 } },
  health: { ...RETENTION, attempts: 1 },
});
