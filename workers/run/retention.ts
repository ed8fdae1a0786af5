// Finished jobs are kept for a bounded age and count (SPEC §8; queues/job-options.ts). BullMQ
// applies removeOnComplete/removeOnFail only as another job of the same queue finishes, so a
// queue that goes quiet (a host drained, a gc queue after a burst of failures) kept its
// finished jobs past their age for good, each failed create with its user-data. Each worker
// process sweeps the queues it serves: at start, then every hour, the finished jobs older than
// their age removed in batches (BullMQ's own clean, by the finished time the set is scored by).
// Several processes sweeping the same queue remove each job once.
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import { RETENTION } from '../../queues/job-options.js';

export const RETENTION_SWEEP_MS = 60 * 60_000;
/** Jobs removed by one clean call: one Lua script each, so Redis is never held long. */
const BATCH = 1_000;
/** At most this many batches per queue and kind per sweep; the next sweep takes the rest. */
const MAX_BATCHES = 100;

const AGES_MS = {
  completed: RETENTION.removeOnComplete.age * 1_000,
  failed: RETENTION.removeOnFail.age * 1_000,
} as const;

/** Removes the finished jobs of `queues` older than their age; resolves with how many. */
export async function sweepRetention(queues: readonly Queue[]): Promise<number> {
  let removed = 0;
  for (const queue of queues) {
    for (const kind of ['completed', 'failed'] as const) {
      for (let batch = 0; batch < MAX_BATCHES; batch += 1) {
        const ids = await queue.clean(AGES_MS[kind], BATCH, kind);
        removed += ids.length;
        if (ids.length < BATCH) break;
      }
    }
  }
  return removed;
}

/** Sweeps now and every RETENTION_SWEEP_MS until the returned stop is called. */
export function sweepRetentionEvery(
  queues: () => readonly Queue[],
  logger: Logger,
  everyMs = RETENTION_SWEEP_MS,
): () => void {
  let running: Promise<void> | undefined;
  let stopped = false;
  const sweep = (): void => {
    if (running !== undefined || stopped) return;
    running = sweepRetention(queues())
      .then((removed) => {
        if (removed > 0)
          logger.info({ removed }, 'retention: finished jobs past their age removed');
      })
      .catch((err: unknown) => {
        // Cut short by the shutdown (its connection closed): nothing to say.
        if (stopped) return;
        logger.warn({ err: (err as Error).message }, 'retention: sweep failed; next one later');
      })
      .finally(() => {
        running = undefined;
      });
  };
  sweep();
  const timer = setInterval(sweep, everyMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
