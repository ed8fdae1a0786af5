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

/**
 * A signal that fires with the first source's reason. Not AbortSignal.any: its listeners live
 * as long as the sources do, and a lease's signal outlives many jobs' callers (STYLE 5).
 */
export function linkSignals(sources: readonly (AbortSignal | undefined)[]): LinkedSignal {
  const controller = new AbortController();
  const live = sources.filter((s): s is AbortSignal => s !== undefined);
  const dispose = (): void => {
    for (const s of live) s.removeEventListener('abort', onAbort);
  };
  function onAbort(this: AbortSignal): void {
    dispose();
    controller.abort(this.reason);
  }
  const fired = live.find((s) => s.aborted);
  if (fired !== undefined) {
    controller.abort(fired.reason);
    return { signal: controller.signal, dispose: () => undefined };
  }
  for (const s of live) s.addEventListener('abort', onAbort, { once: true });
  return { signal: controller.signal, dispose };
}
