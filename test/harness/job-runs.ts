// A worker process's runs, read from its `job run` debug lines (one per run, delayed re-queues
// included, with wall-clock startedAt/endedAt), and how many of a set of intervals were open at
// once: what the concurrency tests prove their limits with.
import { once } from 'node:events';
import type { LogLine, WorkerProcess } from './worker-process.js';

export interface Run {
  readonly worker: number;
  readonly job: string;
  readonly instance: string | undefined;
  readonly startedAt: number;
  readonly endedAt: number;
}

/** A half-open wall-clock interval [start, end) in ms, and what it stands for. */
export interface Interval {
  readonly start: number;
  readonly end: number;
  readonly label: string;
}

/**
 * The largest number of intervals open at one instant. Intervals are half-open [start, end):
 * at equal timestamps ends count before starts, so a run that ends in the millisecond another
 * begins is not taken for an overlap (Date.now() cannot order them), and a run shorter than the
 * clock's millisecond (start === end) overlaps nothing.
 */
export function maxOverlap(intervals: readonly Interval[]): {
  max: number;
  at?: number;
  open: string[];
} {
  const events = intervals
    .filter((i) => i.end > i.start)
    .flatMap((i) => [
      { t: i.start, d: 1, i },
      { t: i.end, d: -1, i },
    ])
    .sort((a, b) => a.t - b.t || a.d - b.d);
  const open = new Set<Interval>();
  let best: { max: number; at?: number; open: string[] } = { max: 0, open: [] };
  for (const e of events) {
    if (e.d > 0) open.add(e.i);
    else open.delete(e.i);
    if (open.size > best.max) {
      best = { max: open.size, at: e.t, open: [...open].map((i) => i.label) };
    }
  }
  return best;
}

export function overlaps(a: Interval, b: Interval): boolean {
  return a.start < b.end && b.start < a.end;
}

/** The runs of `queue` a worker logged; `index` tells the workers apart. */
export function jobRuns(worker: WorkerProcess, index: number, queue: string): Run[] {
  return worker.logs
    .filter((l: LogLine) => l.msg === 'job run' && l['queue'] === queue)
    .map((l) => ({
      worker: index,
      job: String(l['job']),
      instance: typeof l['instance'] === 'string' ? l['instance'] : undefined,
      startedAt: Number(l['startedAt']),
      endedAt: Number(l['endedAt']),
    }));
}

/** Resolves once the process's stdout is closed: every log line it wrote has been parsed. */
export async function drained(worker: WorkerProcess): Promise<void> {
  const out = worker.child.stdout;
  if (out === null || out.closed || out.destroyed) return;
  await once(out, 'close');
}
