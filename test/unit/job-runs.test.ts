// workers/run/cancellation.ts: shutdown cancels every run in progress and every run that begins after it;
// a run that ended is not touched.
import { expect, it } from 'vitest';
import { JobRuns } from '../../workers/run/cancellation.js';

it('cancels the runs in progress, not the ended ones, and every later run at its start', () => {
  const runs = new JobRuns();
  const ended = runs.start();
  const a = runs.start();
  const b = runs.start();
  runs.end(ended);
  expect(runs.active).toBe(2);

  const reason = new Error('worker shutting down');
  runs.cancelAll(reason);
  expect(a.signal.aborted && b.signal.aborted).toBe(true);
  expect(a.signal.reason).toBe(reason);
  expect(ended.signal.aborted).toBe(false);
  expect(runs.active).toBe(0);

  const late = runs.start();
  expect(late.signal.aborted).toBe(true);
  expect(late.signal.reason).toBe(reason);
  expect(runs.active).toBe(0);
});
