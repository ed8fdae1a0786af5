// The retry delays the docs state are the ones BullMQ computes from DEFAULT_JOB_OPTIONS: its
// jitter takes a delay between (1 - jitter) and all of the nominal one (Backoffs.calculate),
// never above it, so the docs give each retry's window rather than a ± figure.
import fs from 'node:fs';
import { Backoffs, type BackoffOptions } from 'bullmq';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_JOB_OPTIONS } from '../../queues/job-options.js';
import type { JobName } from '../../queues/registry.js';
import { markdownTable } from '../harness/markdown.js';

const doc = (name: string): string => fs.readFileSync(`docs/${name}`, 'utf8');

/** BullMQ's delay before the retry that follows failed attempt `attemptsMade`, at `random`. */
function delayAt(backoff: BackoffOptions, attemptsMade: number, random: number): number {
  vi.spyOn(Math, 'random').mockReturnValue(random);
  // Job#shouldRetryJob passes the attempts made including the one that just failed.
  const delay = Backoffs.calculate(backoff, attemptsMade, new Error('transient'), undefined as never);
  if (typeof delay !== 'number') throw new Error(`no delay for ${JSON.stringify(backoff)}`);
  return delay;
}

const seconds = (ms: number): string => String(ms / 1000);

/** Each retry's window, `1–2 s`: the shortest delay and (just under) the longest. */
function retryWindows(name: JobName): string[] {
  const { attempts = 1, backoff } = DEFAULT_JOB_OPTIONS[name];
  if (backoff === undefined || typeof backoff === 'number') return [];
  const windows: string[] = [];
  for (let made = 1; made < attempts; made++) {
    const low = delayAt(backoff, made, 0);
    const high = delayAt(backoff, made, 1 - 1e-12) + 1;
    windows.push(`${seconds(low)}–${seconds(high)} s`);
  }
  return windows;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('retry delays in the docs', () => {
  it("docs/jobs.md's options table gives BullMQ's window for every retry", () => {
    const rows = markdownTable(doc('jobs.md'), '## Options');
    const seen = new Set<string>();
    for (const [jobs = '', attempts = '', backoff = ''] of rows) {
      for (const name of [...jobs.matchAll(/`(\w+)`/g)].map((m) => m[1] as JobName)) {
        seen.add(name);
        expect(attempts, name).toBe(String(DEFAULT_JOB_OPTIONS[name].attempts));
        const windows = retryWindows(name);
        expect(backoff, name).toBe(
          windows.length === 0 ? 'none' : `exponential: ${windows.join(', ')}`,
        );
      }
    }
    expect([...seen].sort()).toEqual(Object.keys(DEFAULT_JOB_OPTIONS).sort());
  });

  it("docs/workers.md's error table gives a create's windows, and no ± figure", () => {
    const workers = doc('workers.md');
    expect(retryWindows('create')).toEqual(['1–2 s', '2–4 s', '4–8 s', '8–16 s']);
    expect(workers).toContain(retryWindows('create').join(', '));
    expect(workers).not.toMatch(/±\s*50/);
    expect(doc('jobs.md')).not.toMatch(/±\s*50/);
  });
});
