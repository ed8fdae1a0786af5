// The one-line progress of a create while `kvm2 create --wait` waits, drawn on standard error
// when it is a terminal. The worker sets the job's progress to { phase, bytes?, totalBytes? };
// this polls it from the host's queue every half second. Progress is a courtesy: a failure to
// read it never fails the command.
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { hostQueueName } from '../../queues/names.js';
import { CREATE_PHASES, type CreatePhase, type CreateProgress } from '../../queues/registry.js';
import { connectProducer, createProducerConnection, type RedisTarget } from '../../queues/redis.js';
import { formatBytes } from '../terminal/format.js';
import type { CliIo } from '../terminal/io.js';

const PHASES: ReadonlySet<string> = new Set(CREATE_PHASES);

const POLL_MS = 500;
const BAR_WIDTH = 20;
/** Erase the line and go back to its start. */
const CLEAR_LINE = '\r\x1b[2K';

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/**
 * The job's progress (queues/registry.ts, CreateProgress) when it has the worker's shape;
 * undefined otherwise (not set yet). Read from Redis, so checked field by field.
 */
export function parseProgress(value: unknown): CreateProgress | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { phase, bytes, totalBytes, deadline } = value as Record<string, unknown>;
  if (typeof phase !== 'string' || !PHASES.has(phase)) return undefined;
  return {
    phase: phase as CreatePhase,
    ...(isCount(bytes) ? { bytes } : {}),
    ...(isCount(totalBytes) ? { totalBytes } : {}),
    ...(isCount(deadline) ? { deadline } : {}),
  };
}

/** `h1/web-1  download  [#####---------------]   25%  256 MiB / 1.0 GiB  12s` */
export function renderProgress(
  label: string,
  progress: CreateProgress | undefined,
  elapsedMs: number,
  columns: number,
  now = Date.now(),
): string {
  const parts = [label, (progress?.phase ?? 'queued').padEnd(8)];
  const bytes = progress?.bytes;
  const total = progress?.totalBytes;
  if (bytes !== undefined && total !== undefined && total > 0) {
    const fraction = Math.min(1, bytes / total);
    const filled = Math.round(fraction * BAR_WIDTH);
    parts.push(
      `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`,
      `${String(Math.floor(fraction * 100)).padStart(3)}%`,
      `${formatBytes(bytes)} / ${formatBytes(total)}`,
    );
  } else if (bytes !== undefined) {
    parts.push(formatBytes(bytes));
  }
  if (progress?.deadline !== undefined) {
    parts.push(`gives up in ${Math.max(0, Math.ceil((progress.deadline - now) / 1000))}s`);
  }
  parts.push(`${Math.floor(elapsedMs / 1000)}s`);
  return parts.join('  ').slice(0, Math.max(10, columns - 1));
}

export interface ProgressTarget {
  readonly redis: RedisTarget;
  readonly prefix: string;
  readonly host: string;
  readonly jobId: string;
  /** Shown at the start of the line, e.g. the instance id. */
  readonly label: string;
}

export interface ProgressDisplay {
  /** Stops polling, closes the connection, erases the line. */
  stop(): Promise<void>;
}

export function showProgress(io: CliIo, target: ProgressTarget): ProgressDisplay {
  const stopping = new AbortController();
  const started = Date.now();
  let progress: CreateProgress | undefined;
  const draw = (): void =>
    io.errRaw(
      `${CLEAR_LINE}${renderProgress(target.label, progress, Date.now() - started, io.stderrColumns)}`,
    );

  const poll = async (): Promise<void> => {
    const redis = createProducerConnection(target.redis);
    redis.on('error', () => {
      // Progress is best effort; the wait itself reports Redis failures.
    });
    let queue: Queue | undefined;
    try {
      // BullMQ waits for "ready" without bound: make the queue only on a live connection.
      const connected = await connectProducer(redis, target.redis).then(
        () => true,
        () => false,
      );
      if (connected) {
        queue = new Queue(hostQueueName(target.host), { connection: redis, prefix: target.prefix });
        queue.on('error', () => {
          // As above.
        });
      }
      while (!stopping.signal.aborted) {
        const job = await queue?.getJob(target.jobId).catch(() => undefined);
        progress = parseProgress(job?.progress) ?? progress;
        draw();
        await sleep(POLL_MS, undefined, { signal: stopping.signal }).catch(() => undefined);
      }
    } finally {
      await queue?.close().catch(() => undefined);
      redis.disconnect();
    }
  };

  draw();
  const polling = poll().catch(() => undefined);
  return {
    async stop() {
      stopping.abort();
      await polling;
      io.errRaw(CLEAR_LINE);
    },
  };
}
