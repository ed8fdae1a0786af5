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

/**
 * What the runner knows of a run before it dispatches. A class, not an object literal with a
 * `get logger()`: V8 makes such a literal at runtime, accessor by accessor (~1 µs a run against
 * ~0.08 for this, measured alone).
 */
export class RunStart implements RunContext {
  readonly signal: AbortSignal;

  constructor(
    readonly services: WorkerServices,
    readonly job: Job,
    readonly queue: string,
    readonly attempt: number,
    readonly controller: AbortController,
    readonly span: Span,
    private readonly loggerOf: () => Logger,
  ) {
    this.signal = controller.signal;
  }

  get logger(): Logger {
    return this.loggerOf();
  }
}

/**
 * The run of a job whose data has been validated as `name`'s. A class with the context's fields
 * copied, not an object made by `Object.create(context, descriptors)`: that one was made in
 * dictionary mode, and each run paid ~19 µs for it, and more for every read of it (bench/queue's
 * profile, docs/benchmarks.md).
 */
class ValidatedRun<N extends JobName> implements JobRun<N> {
  readonly services: WorkerServices;
  readonly job: Job;
  readonly queue: string;
  readonly attempt: number;
  readonly controller: AbortController;
  readonly signal: AbortSignal;
  readonly span: Span;

  constructor(
    private readonly context: RunContext,
    readonly name: N,
    readonly data: JobData<N>,
  ) {
    this.services = context.services;
    this.job = context.job;
    this.queue = context.queue;
    this.attempt = context.attempt;
    this.controller = context.controller;
    this.signal = context.signal;
    this.span = context.span;
  }

  /** The context's, made when first read. */
  get logger(): Logger {
    return this.context.logger;
  }
}

export function jobRun<N extends JobName>(
  context: RunContext,
  name: N,
  data: JobData<N>,
): JobRun<N> {
  return new ValidatedRun(context, name, data);
}
