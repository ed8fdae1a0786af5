// Whether this process has just been frozen (SIGSTOP, a paused VM or container, a host swapping
// hard), so that a libvirt call is not sent from a stale turn of the event loop. A job's Redis
// lease learns it is lost from timers (workers/locks/lease.ts), and after a freeze Node runs
// the I/O callbacks that arrived meanwhile before the overdue timers: code resuming on a
// libvirt reply would send its next call with the run's signal not yet aborted, after the lock
// had passed to another worker (a define after that worker's delete). A tick marks each timer
// turn; a call made when the last tick is old first waits one timer turn, in which the overdue
// timers (a lease's expiry) run before it, and its signal is then read again.
import { performance } from 'node:perf_hooks';

/** How often the tick runs, from the first call on (unref'd: it keeps no process alive). */
const TICK_MS = 100;
/** A tick older than this: the loop did not turn for that long. */
const STALE_MS = 500;

let lastTick = 0;
let ticker: NodeJS.Timeout | undefined;

/**
 * True when the event loop has not run its timers for longer than STALE_MS: the caller should
 * let them run (afterTimers) before acting on anything a lease guards.
 */
export function loopFroze(): boolean {
  const now = performance.now();
  if (ticker === undefined) {
    lastTick = now;
    ticker = setInterval(() => {
      lastTick = performance.now();
    }, TICK_MS);
    ticker.unref();
    return false;
  }
  return now - lastTick > STALE_MS;
}

/** Resolves after one turn of the timers: every timer already due has run. */
export function afterTimers(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
