// Keyed locks across processes (SPEC §8): at most one holder per key, a Redis key
// `<prefix>:lock:<key>` holding the holder's token for a TTL it renews while it runs.
// The worker calls tryAcquire and delays a job whose key is busy; the provider takes its locks
// through withLock (KeyedLocks), which waits by polling with jittered backoff. See docs/locks.md.
import { randomBytes } from 'node:crypto';
import type { KeyedLocks } from '../../src/provider/core/keyed-locks.js';
import { linkSignals, sleep } from './abort.js';
import { RedisLease, type Lease } from './lease.js';
import type { RedisConnection } from '../../queues/redis.js';
import { lockKey } from '../../queues/names.js';

export type { Lease } from './lease.js';
export { LockLostError, type LockLossReason } from './lock-lost-error.js';

export interface RedisLocksOptions {
  /** The connection to use; the caller owns it (RedisLocks never closes it). */
  readonly client: RedisConnection;
  /** Keys are `<prefix>:lock:<key>`. */
  readonly prefix?: string | undefined;
  /** How long a lock outlives its holder's last renewal; renewed every ttlMs/3. */
  readonly ttlMs?: number | undefined;
  /** withLock's wait for a busy key: backoff from pollMinMs, doubling up to pollMaxMs. */
  readonly pollMinMs?: number | undefined;
  readonly pollMaxMs?: number | undefined;
}

export const LOCK_DEFAULTS = Object.freeze({
  prefix: 'kvm2',
  ttlMs: 30_000,
  pollMinMs: 25,
  pollMaxMs: 1_000,
});

// Below this the renewal period (ttl/3) drowns in event-loop and network jitter.
const MIN_TTL_MS = 30;

export interface AcquireOptions {
  /** This lease's TTL, instead of the instance's. */
  readonly ttlMs?: number | undefined;
  readonly signal?: AbortSignal | undefined;
}

export class RedisLocks implements KeyedLocks {
  private readonly client: RedisConnection;
  private readonly prefix: string;
  readonly ttlMs: number;
  private readonly pollMinMs: number;
  private readonly pollMaxMs: number;
  /** 128 random bits drawn once: with the counter, every token this instance makes is new. */
  private readonly tokenPrefix = `${randomBytes(16).toString('hex')}.`;
  private tokens = 0;

  constructor(options: RedisLocksOptions) {
    this.client = options.client;
    this.prefix = options.prefix ?? LOCK_DEFAULTS.prefix;
    this.ttlMs = checkTtl(options.ttlMs ?? LOCK_DEFAULTS.ttlMs);
    this.pollMinMs = options.pollMinMs ?? LOCK_DEFAULTS.pollMinMs;
    this.pollMaxMs = options.pollMaxMs ?? LOCK_DEFAULTS.pollMaxMs;
    if (!(this.pollMinMs > 0 && this.pollMaxMs >= this.pollMinMs)) {
      throw new RangeError(`lock poll bounds must be 0 < pollMinMs <= pollMaxMs`);
    }
  }

  /** The Redis key that holds `key`'s lock. */
  lockKey(key: string): string {
    return lockKey(this.prefix, key);
  }

  /**
   * Takes `key` if it is free, else resolves null at once: the worker then delays the job
   * instead of holding a slot while it waits. Rejects on a Redis error or when `signal` fires
   * (a lock taken meanwhile is released first).
   */
  async tryAcquire(key: string, options?: AcquireOptions): Promise<Lease | null> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    const ttlMs = options?.ttlMs === undefined ? this.ttlMs : checkTtl(options.ttlMs);
    const redisKey = this.lockKey(key);
    const token = this.newToken();
    const sentAt = performance.now();
    const ok = await this.client.set(redisKey, token, 'PX', ttlMs, 'NX');
    if (ok !== 'OK') {
      signal?.throwIfAborted();
      return null;
    }
    const lease = new RedisLease(this.client, key, redisKey, token, ttlMs, sentAt);
    if (signal?.aborted === true) {
      await lease.release();
      signal.throwIfAborted();
    }
    return lease;
  }

  /**
   * A fresh token for a lock (taken here or by a script, then adopted): this instance's random
   * prefix and a counter. A token only has to differ from every other holder's, and no one
   * gains by guessing one (whoever can read Redis sees the locks): a UUID drawn for each lock
   * cost the queue path ~4 µs a job in bench/queue's profile, this ~0.2.
   */
  newToken(): string {
    return this.tokenPrefix + (++this.tokens).toString(36);
  }

  /**
   * The lease of a lock a script took with `token` (workers/run/admission.ts takes the instance lock
   * in the same round trip as the generation check): renewed and released like any other.
   * `sentAt` is performance.now() when that script was sent. With `controller` (a job run's),
   * the lease aborts that on loss and its signal is that controller's, which then also fires
   * when the run is cancelled.
   */
  adopt(key: string, token: string, sentAt: number, controller?: AbortController): Lease {
    const redisKey = this.lockKey(key);
    return new RedisLease(this.client, key, redisKey, token, this.ttlMs, sentAt, controller);
  }

  /**
   * Takes `key`, waiting while it is busy (polling with jittered exponential backoff). On
   * `signal` it rejects with the signal's reason and holds nothing.
   */
  async acquire(key: string, options?: AcquireOptions): Promise<Lease> {
    const signal = options?.signal;
    for (let attempt = 0; ; attempt++) {
      const lease = await this.tryAcquire(key, options);
      if (lease !== null) return lease;
      await sleep(this.backoff(attempt), signal);
    }
  }

  /**
   * Runs `fn` holding `key`. The signal given to `fn` fires with the caller's reason, or with a
   * LockLostError when the lock is lost. If `fn` settles anyway, its outcome stands: what it did
   * is done, and the signal already told it the lock was gone.
   */
  async withLock<T>(
    key: string,
    fn: (signal: AbortSignal) => Promise<T>,
    options?: AcquireOptions,
  ): Promise<T> {
    const lease = await this.acquire(key, options);
    const linked = linkSignals([options?.signal, lease.signal]);
    try {
      return await fn(linked.signal);
    } finally {
      linked.dispose();
      await lease.release();
    }
  }

  /** "Equal jitter": half the capped exponential step fixed, half random, so waiters spread. */
  private backoff(attempt: number): number {
    const cap = Math.min(this.pollMaxMs, this.pollMinMs * 2 ** Math.min(attempt, 30));
    return cap / 2 + Math.random() * (cap / 2);
  }
}

function checkTtl(ttlMs: number): number {
  if (!Number.isInteger(ttlMs) || ttlMs < MIN_TTL_MS) {
    throw new RangeError(`lock ttlMs must be an integer of at least ${MIN_TTL_MS}, got ${ttlMs}`);
  }
  return ttlMs;
}
