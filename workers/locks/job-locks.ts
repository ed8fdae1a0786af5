// The provider's keyed locks for one job run (SPEC §8: "a job that finds its key busy is
// delayed, not blocked"). The processor takes the instance lock itself before calling the
// provider (workers/run/admission.ts), so a busy instance costs no slot; when the provider then asks
// for that same key it is given the job's lease. Any other key (an image fill) is tried once:
// busy throws KeyBusyError, which the runner turns into a delayed re-queue like a busy
// instance. One small object per run, handed to a provider view (Provider.withLocks): no
// async-context tracking, which would cost every promise in the process.
import { Kvm2Error } from '../../src/errors/error.js';
import type { KeyedLocks } from '../../src/provider/core/keyed-locks.js';
import { linkSignals } from './abort.js';
import type { Lease, RedisLocks } from './redis-locks.js';

export class KeyBusyError extends Kvm2Error {
  declare readonly code: 'ERR_KEY_BUSY';
  override name = 'KeyBusyError';

  constructor(readonly key: string) {
    super('ERR_KEY_BUSY', `${key} is busy with another job`);
  }
}

export class JobLocks implements KeyedLocks {
  readonly #held: ReadonlyMap<string, Lease>;

  constructor(
    private readonly redisLocks: RedisLocks,
    held: readonly Lease[] = [],
  ) {
    this.#held = new Map(held.map((l) => [l.key, l]));
  }

  async withLock<T>(
    key: string,
    fn: (signal: AbortSignal) => Promise<T>,
    options?: { signal?: AbortSignal | undefined },
  ): Promise<T> {
    const own = this.#held.get(key);
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
