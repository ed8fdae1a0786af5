// The provider's keyed locks inside a worker (SPEC §8: "a job that finds its key busy is
// delayed, not blocked"). The processor takes the instance lock itself before calling the
// provider, so a busy instance costs no slot; when the provider then asks for that same key it
// is given the job's lease. Any other key (an image fill) is tried once: busy throws
// KeyBusyError, which the processor turns into a delayed re-queue like a busy instance.
// Which leases the running job holds travels with its async context (AsyncLocalStorage), so
// the one shared Provider serves every concurrent job.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { KeyedLocks } from '../src/provider/locks.js';
import { linkSignals } from './locks/abort.js';
import type { Lease, RedisLocks } from './locks.js';

export class KeyBusyError extends Error {
  readonly code = 'ERR_KEY_BUSY';
  readonly kind = 'transient' as const;
  override name = 'KeyBusyError';

  constructor(readonly key: string) {
    super(`${key} is busy with another job`);
  }
}

export class JobLocks implements KeyedLocks {
  readonly #held = new AsyncLocalStorage<ReadonlyMap<string, Lease>>();

  constructor(readonly redisLocks: RedisLocks) {}

  /** Runs `fn` (a job's work) with `leases` handed to the provider when it asks for their keys. */
  holding<T>(leases: readonly Lease[], fn: () => Promise<T>): Promise<T> {
    return this.#held.run(new Map(leases.map((l) => [l.key, l])), fn);
  }

  async withLock<T>(
    key: string,
    fn: (signal: AbortSignal) => Promise<T>,
    options?: { signal?: AbortSignal | undefined },
  ): Promise<T> {
    const held = this.#held.getStore();
    // Outside a job (a CLI command, a test): wait for the key like any other holder.
    if (held === undefined) return this.redisLocks.withLock(key, fn, options);
    const own = held.get(key);
    const lease = own ?? (await this.redisLocks.tryAcquire(key, { signal: options?.signal }));
    if (lease === null) throw new KeyBusyError(key);
    const linked = linkSignals([options?.signal, lease.signal]);
    try {
      return await fn(linked.signal);
    } finally {
      linked.dispose();
      // The job's own lease is released by the job; one taken here is ours to give back.
      if (own === undefined) await lease.release();
    }
  }
}
