// The in-process keyed locks (src/provider/core/keyed-locks.ts): one holder per key, even when
// a waiter gives up while the holder still runs.
import { describe, expect, it } from 'vitest';
import { InProcessLocks } from '../../src/provider/core/keyed-locks.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('InProcessLocks', () => {
  it('keeps a later caller waiting for the holder after the waiter before it gives up', async () => {
    const locks = new InProcessLocks();
    const events: string[] = [];
    const endA = deferred();
    const startedA = deferred();
    const a = locks.withLock('k', async () => {
      events.push('A start');
      startedA.resolve();
      await endA.promise;
      events.push('A end');
    });
    await startedA.promise;

    const giveUp = new AbortController();
    const b = locks.withLock('k', () => Promise.resolve(events.push('B ran')), {
      signal: giveUp.signal,
    });
    giveUp.abort(new Error('B gave up'));
    await expect(b).rejects.toThrow('B gave up');

    const c = locks.withLock('k', () => Promise.resolve(events.push('C ran')));
    await new Promise((r) => setTimeout(r, 10));
    expect(events).toEqual(['A start']);

    endA.resolve();
    await Promise.all([a, c]);
    expect(events).toEqual(['A start', 'A end', 'C ran']);
  });
});
