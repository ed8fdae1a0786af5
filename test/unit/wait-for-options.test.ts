// waitFor's timer: a timeout past what setTimeout can hold (2^31-1 ms, about 24.8 days; Node
// fires a longer one after 1 ms) fires when it should, in steps.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { setLongTimeout } from '../../queues/result-readers.js';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

const DAY_MS = 24 * 3_600_000;

describe('setLongTimeout', () => {
  it('fires after 30 days, not before', () => {
    const fire = vi.fn();
    setLongTimeout(30 * DAY_MS, fire);
    vi.advanceTimersByTime(2 ** 31); // where a plain setTimeout would have fired long ago
    expect(fire).not.toHaveBeenCalled();
    vi.advanceTimersByTime(30 * DAY_MS - 2 ** 31 - 1);
    expect(fire).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fire).toHaveBeenCalledTimes(1);
  });

  it('a short one fires once, on time', () => {
    const fire = vi.fn();
    setLongTimeout(1_000, fire);
    vi.advanceTimersByTime(999);
    expect(fire).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fire).toHaveBeenCalledTimes(1);
  });

  it('cancelled in any step, never fires', () => {
    const fire = vi.fn();
    const cancel = setLongTimeout(60 * DAY_MS, fire);
    vi.advanceTimersByTime(40 * DAY_MS);
    cancel();
    vi.advanceTimersByTime(30 * DAY_MS);
    expect(fire).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});
