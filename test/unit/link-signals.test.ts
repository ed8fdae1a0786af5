import { describe, expect, it } from 'vitest';
import { linkSignals } from '../../workers/locks/abort.js';

describe('linkSignals', () => {
  it('fires with the reason of whichever source fires first, and only once', () => {
    const a = new AbortController();
    const b = new AbortController();
    const linked = linkSignals([a.signal, undefined, b.signal]);
    const seen: unknown[] = [];
    linked.signal.addEventListener('abort', () => seen.push(linked.signal.reason));
    expect(linked.signal.aborted).toBe(false);
    b.abort(new Error('lease lost'));
    a.abort(new Error('job cancelled'));
    expect(seen).toHaveLength(1);
    expect((seen[0] as Error).message).toBe('lease lost');
  });

  it('is already aborted when a source is', () => {
    const a = new AbortController();
    a.abort(new Error('gone'));
    const linked = linkSignals([new AbortController().signal, a.signal]);
    expect(linked.signal.aborted).toBe(true);
    expect((linked.signal.reason as Error).message).toBe('gone');
  });

  it('hands back a single source as it is, with nothing to dispose', () => {
    const a = new AbortController();
    const linked = linkSignals([undefined, a.signal, a.signal]);
    expect(linked.signal).toBe(a.signal);
    linked.dispose();
    a.abort(new Error('x'));
    expect(linked.signal.aborted).toBe(true);
  });

  it('does not link a signal with one of its own sources again', () => {
    const job = new AbortController();
    const lease = new AbortController();
    const run = linkSignals([job.signal, lease.signal]);
    // The provider passes the run's signal down; the lock for the same lease adds nothing.
    const again = linkSignals([run.signal, lease.signal]);
    expect(again.signal).toBe(run.signal);
    const reversed = linkSignals([lease.signal, run.signal]);
    expect(reversed.signal).toBe(run.signal);
    // A signal the run does not follow is still linked.
    const other = new AbortController();
    const wider = linkSignals([run.signal, other.signal]);
    expect(wider.signal).not.toBe(run.signal);
    other.abort(new Error('other'));
    expect(wider.signal.aborted).toBe(true);
    expect(run.signal.aborted).toBe(false);
  });

  it('removes its listeners from the sources on dispose', () => {
    const a = new AbortController();
    const b = new AbortController();
    const linked = linkSignals([a.signal, b.signal]);
    linked.dispose();
    a.abort(new Error('after dispose'));
    expect(linked.signal.aborted).toBe(false);
  });
});
