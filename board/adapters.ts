// One bull-board adapter per kvm2 queue, redacting at the source: whatever route bull-board
// serves a job, a log or a scheduler from, it reads it through these methods. Redacting here
// rather than per route keeps working when a bull-board release adds a route.
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { Queue, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  redactField,
  redactScheduler,
  scrubFailure,
  scrubText,
  secretFragments,
} from './redaction.js';

/**
 * The job, rendering its failure text without its own secrets. bull-board builds what it
 * shows from `job.toJSON()` (BullMQ never calls it itself), so only the rendering changes; the
 * override is not enumerable because toJSON spreads the job's own properties.
 */
function withScrubbedFailure(job: Job): Job {
  const fragments = secretFragments(job.name, job.data);
  if (fragments.length === 0) return job;
  const toJSON = job.toJSON.bind(job);
  Object.defineProperty(job, 'toJSON', {
    value: () => scrubFailure(toJSON(), fragments),
    enumerable: false,
  });
  return job;
}

/** BullMQAdapter whose every read of a job, its logs or a scheduler is redacted. */
export class RedactingBullMQAdapter extends BullMQAdapter {
  constructor(queue: Queue, options: { readonly readOnlyMode: boolean }) {
    super(queue, { readOnlyMode: options.readOnlyMode });
    this.setFormatter('data', redactField);
    // Nothing of ours returns user-data, but a return value is job output we do not vet here.
    this.setFormatter('returnValue', redactField);
  }

  override async getJob(id: string): Promise<Job | undefined> {
    const job = await super.getJob(id);
    return job === undefined ? undefined : withScrubbedFailure(job);
  }

  override async getJobs(...args: Parameters<BullMQAdapter['getJobs']>): Promise<Job[]> {
    const jobs = await super.getJobs(...args);
    return jobs.map(withScrubbedFailure);
  }

  /** Job logs are free text a worker wrote (SPEC §8 forbids user-data there; this is the net). */
  override async getJobLogs(id: string): Promise<string[]> {
    const [logs, job] = await Promise.all([super.getJobLogs(id), super.getJob(id)]);
    const fragments = job === undefined ? [] : secretFragments(job.name, job.data);
    return logs.map((line) => scrubText(line, fragments));
  }

  /** bull-board lists a scheduler's template raw, data included. */
  override async getJobSchedulers(): ReturnType<BullMQAdapter['getJobSchedulers']> {
    const schedulers = await super.getJobSchedulers();
    return schedulers.map(redactScheduler);
  }
}

export interface BoardQueues {
  readonly adapters: RedactingBullMQAdapter[];
  close(): Promise<void>;
}

/**
 * A Queue and its adapter for each name, all on the one connection given: BullMQ does not
 * close a connection it was handed, so the caller closes it after these.
 */
export function createBoardQueues(
  names: readonly string[],
  options: { readonly connection: Redis; readonly prefix: string; readonly readOnly: boolean },
): BoardQueues {
  const queues = names.map(
    (name) => new Queue(name, { connection: options.connection, prefix: options.prefix }),
  );
  return {
    adapters: queues.map(
      (queue) => new RedactingBullMQAdapter(queue, { readOnlyMode: options.readOnly }),
    ),
    async close() {
      await Promise.all(queues.map((queue) => queue.close()));
    },
  };
}
