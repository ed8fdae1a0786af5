// Keyed locks: at most one holder per key (an instance id, a host+image fill). The provider
// takes them through this interface; an in-process implementation serves a single process and
// the tests, the Redis one (token, TTL, renewal) comes with the queue layer.

export interface KeyedLocks {
  /**
   * Runs `fn` holding `key`. Waits for the key while `signal` allows. The signal passed to `fn`
   * fires when the caller's does or when the lock is lost (a Redis lock whose renewal failed).
   */
  withLock<T>(
    key: string,
    fn: (signal: AbortSignal) => Promise<T>,
    options?: { signal?: AbortSignal | undefined },
  ): Promise<T>;
}

/** One process's locks: a FIFO chain of promises per key. */
export class InProcessLocks implements KeyedLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async withLock<T>(
    key: string,
    fn: (signal: AbortSignal) => Promise<T>,
    options?: { signal?: AbortSignal | undefined },
  ): Promise<T> {
    const signal = options?.signal ?? new AbortController().signal;
    signal.throwIfAborted();
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    try {
      await waitOrAbort(previous, signal);
      return await fn(signal);
    } finally {
      release();
      // Drop the entry only once this tail has settled: a waiter that gave up still sits behind
      // the holder, and the next caller must wait for that holder through this tail.
      void tail.then(() => {
        if (this.tails.get(key) === tail) this.tails.delete(key);
      });
    }
  }
}

function waitOrAbort(p: Promise<void>, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    void p.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}
