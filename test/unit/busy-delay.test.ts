// How long a job that finds its key busy waits before it runs again (workers/run/outcome.ts).
import { describe, expect, it } from 'vitest';
import { BUSY_DELAY_MAX_MS, BUSY_DELAY_MIN_MS, busyDelay } from '../../workers/run/outcome.js';

function delays(waitedMs: number, n = 200): number[] {
  return Array.from({ length: n }, () => {
    const step = busyDelay(waitedMs);
    expect(step).toMatchObject({ type: 'delay', reason: 'busy' });
    return step.type === 'delay' ? step.ms : NaN;
  });
}

describe('busyDelay', () => {
  it('retries a key busy for a moment soon', () => {
    for (const ms of delays(0)) {
      expect(ms).toBeGreaterThanOrEqual(BUSY_DELAY_MIN_MS / 2);
      expect(ms).toBeLessThanOrEqual(BUSY_DELAY_MIN_MS);
    }
  });

  it('backs off with the time the job has waited: a quarter of it, jittered down by half', () => {
    for (const ms of delays(8_000)) {
      expect(ms).toBeGreaterThanOrEqual(1_000);
      expect(ms).toBeLessThanOrEqual(2_000);
    }
  });

  it('never waits longer than the cap, however long the fill', () => {
    const long = delays(20 * 60_000);
    for (const ms of long) {
      expect(ms).toBeGreaterThanOrEqual(BUSY_DELAY_MAX_MS / 2);
      expect(ms).toBeLessThanOrEqual(BUSY_DELAY_MAX_MS);
    }
    // Spread, so the waiters of one fill do not come back together.
    expect(new Set(long).size).toBeGreaterThan(50);
  });

  it('comes back a few hundred times over a 20-minute fill, not thousands', () => {
    let waited = 0;
    let runs = 0;
    while (waited < 20 * 60_000) {
      const step = busyDelay(waited);
      waited += step.type === 'delay' ? step.ms : Infinity;
      runs += 1;
    }
    expect(runs).toBeLessThan(400);
    expect(runs).toBeGreaterThan(100);
  });
});
