// One bull-board adapter per kvm2 queue, redacting at the source: whatever route bull-board
// serves a job, a log or a scheduler from, it reads it through these methods. Redacting here
// rather than per route keeps working when a bull-board release adds a route.
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { Queue, type Job } from 'bullmq';
import { redactField, redactScheduler, Scrubber } from './redaction.js';
import type { RedisConnection } from '../queues/redis.js';

/**
 * How many jobs' scrubbers an adapter keeps. The page polls every few seconds and shows at most
 * a few hundred jobs; beyond that the least recently used is made again when next needed.
 */
const SCRUBBERS_KEPT = 1_000;

/**
 * Each job's scrubber, made once. A job's data never changes under one id and timestamp (the
 * board refuses edits, and a job id used again after removal comes with a new timestamp).
 */
class ScrubberCache {
  readonly #kept = new Map<string, Scrubber>();

  for(job: Job): Scrubber {
    const key = `${job.id ?? ''}\u0000${job.timestamp}`;
    let scrubber = this.#kept.get(key);
    if (scrubber === undefined) {
      scrubber = Scrubber.forJob(job.name, job.data);
      if (this.#kept.size >= SCRUBBERS_KEPT) {
        this.#kept.delete(this.#kept.keys().next().value as string);
      }
    } else {
      this.#kept.delete(key);
    }
    this.#kept.set(key, scrubber);
    return scrubber;
  }
}

/**
 * The job, rendering its failure text without its own secrets. bull-board builds what it
 * shows from `job.toJSON()` (BullMQ never calls it itself), so only the rendering changes; the
 * override is not enumerable because toJSON spreads the job's own properties.
 */
function withScrubbedFailure(job: Job, scrubber: Scrubber): Job {
  if (scrubber.empty) return job;
  const toJSON = job.toJSON.bind(job);
  Object.defineProperty(job, 'toJSON', {
    value: () => scrubber.scrubFailure(toJSON()),
    enumerable: false,
  });
  return job;
}

/** BullMQAdapter whose every read of a job, its logs or a scheduler is redacted. */
export class RedactingBullMQAdapter extends BullMQAdapter {
  readonly #scrubbers = new ScrubberCache();

  constructor(queue: Queue, options: { readonly readOnlyMode: boolean }) {
    super(queue, { readOnlyMode: options.readOnlyMode });
    this.setFormatter('data', redactField);
    // Nothing of ours returns user-data, but a return value is job output we do not vet here.
    this.setFormatter('returnValue', redactField);
  }

  override async getJob(id: string): Promise<Job | undefined> {
    const job = await super.getJob(id);
    return job === undefined ? undefined : withScrubbedFailure(job, this.#scrubbers.for(job));
  }

  override async getJobs(...args: Parameters<BullMQAdapter['getJobs']>): Promise<Job[]> {
    const jobs = await super.getJobs(...args);
    return jobs.map((job) => withScrubbedFailure(job, this.#scrubbers.for(job)));
  }

  /** Job logs are free text a worker wrote (SPEC §8 forbids user-data there; this is the net). */
  override async getJobLogs(id: string): Promise<string[]> {
    const [logs, job] = await Promise.all([super.getJobLogs(id), super.getJob(id)]);
    const scrubber = job === undefined ? Scrubber.EMPTY : this.#scrubbers.for(job);
    return logs.map((line) => scrubber.scrub(line));
  }

  /** bull-board lists a scheduler's template raw, data included. */
  override async getJobSchedulers(): ReturnType<BullMQAdapter['getJobSchedulers']> {
    const schedulers = await super.getJobSchedulers();
    return schedulers.map(redactScheduler);
  }
}

export interface BoardQueues {
  readonly adapters: RedactingBullMQAdapter[];
  /** The Queue of a name given, for the fleet page's counts. */
  queue(name: string): Queue | undefined;
  close(): Promise<void>;
}

/**
 * A Queue and its adapter for each name, all on the one connection given: BullMQ does not
 * close a connection it was handed, so the caller closes it after these.
 */
export function createBoardQueues(
  names: readonly string[],
  options: {
    readonly connection: RedisConnection;
    readonly prefix: string;
    readonly readOnly: boolean;
  },
): BoardQueues {
  const queues = names.map((name) => {
    const queue = new Queue(name, { connection: options.connection, prefix: options.prefix });
    // The connection's errors, which the board logs from the connection itself: unheard, BullMQ
    // would print each one on stderr, once per queue.
    queue.on('error', () => undefined);
    return queue;
  });
  return {
    adapters: queues.map(
      (queue) => new RedactingBullMQAdapter(queue, { readOnlyMode: options.readOnly }),
    ),
    queue: (name) => queues.find((queue) => queue.name === name),
    async close() {
      await Promise.all(queues.map((queue) => queue.close()));
    },
  };
}
