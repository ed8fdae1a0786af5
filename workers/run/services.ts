// The services of a worker process, built once (workers/runtime.ts) and shared by every job run
// (job-run.ts): the provider, Redis, the locks, telemetry, metrics, the runs in progress.
import type { Tracer } from '@opentelemetry/api';
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Kvm2Config } from '../../src/provider/config/schema.js';
import type { Provider } from '../../src/provider/provider.js';
import type { RedisLocks } from '../locks/redis-locks.js';
import type { WorkerMetrics } from './metrics.js';
import type { JobRuns } from './cancellation.js';
import type { HostBreakers } from './host-breaker.js';
import type { RedisConnection } from '../../queues/redis.js';

export interface WorkerServices {
  readonly config: Kvm2Config;
  readonly prefix: string;
  readonly provider: Provider;
  /** Commands: results, generations, the health hash, locks. Never a blocking read. */
  readonly redis: RedisConnection;
  /** Instance and image locks; each job run wraps them in its own JobLocks. */
  readonly locks: RedisLocks;
  readonly logger: Logger;
  readonly tracer: Tracer;
  readonly metrics: WorkerMetrics;
  /** A producer-side queue of that name (GC enqueues deletes through it). */
  readonly queueFor: (name: string) => Queue;
  /** True once shutdown has run out of patience: a cancelled job is released, not failed. */
  readonly releasing: () => boolean;
  /** The runs in progress: each run's cancellation, which shutdown fires. */
  readonly runs: JobRuns;
  /** Hosts found away: their queues pause here until a dial succeeds (host-breaker.ts). */
  readonly breakers?: HostBreakers | undefined;
}
