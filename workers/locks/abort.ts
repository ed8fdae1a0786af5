// Signal plumbing for the lock: an abortable sleep for the waiter's backoff, and one signal that
// fires when any of several do (the caller's or the lease's), with its listeners removable.

/** Resolves after `ms`; rejects with the signal's own reason when it fires first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Removes the listeners on the source signals. */
  dispose(): void;
}

// The sources each linked signal fires for: linking a linked signal with one of its own sources
// again (a job's run signal and the lease it already follows) adds nothing, and is skipped.
const sourcesOf = new WeakMap<AbortSignal, readonly AbortSignal[]>();

function covers(signal: AbortSignal, source: AbortSignal): boolean {
  if (signal === source) return true;
  return sourcesOf.get(signal)?.some((s) => covers(s, source)) ?? false;
}

const NOTHING = (): void => undefined;

/**
 * A signal that fires with the first source's reason. Not AbortSignal.any: its listeners live
 * as long as the sources do, and a lease's signal outlives many jobs' callers (STYLE 5). On a
 * job's hot path: one source (or one that covers the others) is returned as it is, with no
 * controller or listener of its own.
 */
export function linkSignals(sources: readonly (AbortSignal | undefined)[]): LinkedSignal {
  const live: AbortSignal[] = [];
  for (const s of sources) {
    if (s === undefined || live.some((l) => covers(l, s))) continue;
    for (let i = live.length - 1; i >= 0; i--) {
      if (covers(s, live[i] as AbortSignal)) live.splice(i, 1);
    }
    live.push(s);
  }
  const [only] = live;
  if (only !== undefined && live.length === 1) return { signal: only, dispose: NOTHING };
  const controller = new AbortController();
  const fired = live.find((s) => s.aborted);
  if (fired !== undefined) {
    controller.abort(fired.reason);
    return { signal: controller.signal, dispose: NOTHING };
  }
  const dispose = (): void => {
    for (const s of live) s.removeEventListener('abort', onAbort);
  };
  function onAbort(this: AbortSignal): void {
    dispose();
    controller.abort(this.reason);
  }
  for (const s of live) s.addEventListener('abort', onAbort, { once: true });
  sourcesOf.set(controller.signal, live);
  return { signal: controller.signal, dispose };
}
