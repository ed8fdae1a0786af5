// One run of one job, handed to its processor whole (as graphile-worker hands each task its
// helpers): the job, its data validated once, the run's cancellation, its span, and a logger
// that already names the job. The processor answers with an outcome (outcome.ts).
import type { Span } from '@opentelemetry/api';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import type { JobData, JobName } from '../../queues/registry.js';
import type { WorkerServices } from './services.js';

export interface JobRun<N extends JobName = JobName> {
  readonly services: WorkerServices;
  readonly job: Job;
  readonly name: N;
  /** The job's data, validated against the job registry by the runner. */
  readonly data: JobData<N>;
  readonly queue: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /**
   * The run's cancellation: shutdown fires it, and so does the instance lease when its lock is
   * lost (workers/run/admission.ts). `signal` is its signal.
   */
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  readonly span: Span;
  /**
   * The worker's logger with `queue`, `job`, `op` and `instance` bound, made the first time a
   * run logs (most runs never do, and a child of the worker's redacting logger costs ~10 µs).
   */
  readonly logger: Logger;
}

/** Everything of a run but its validated data: what the runner knows before it dispatches. */
export type RunContext = Omit<JobRun, 'name' | 'data'>;

/** The run of a job whose data has been validated as `name`'s (the context's getters kept). */
export function jobRun<N extends JobName>(
  context: RunContext,
  name: N,
  data: JobData<N>,
): JobRun<N> {
  return Object.create(context, {
    name: { value: name, enumerable: true },
    data: { value: data, enumerable: true },
  }) as JobRun<N>;
}
