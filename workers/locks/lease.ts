// A held Redis lock. It renews itself every ttl/3 until released; when renewal finds the key
// gone or someone else's, or Redis stays unreachable until the TTL we last set has run out, the
// lease is lost and its signal fires with a LockLostError.
import { LockLostError, type LockLossReason } from './lock-lost-error.js';
import { RELEASE_SCRIPT, RENEW_SCRIPT } from './scripts.js';
import type { RedisConnection } from '../../queues/redis.js';

export interface Lease {
  /** The key as the caller named it (an instance id, a host+image fill). */
  readonly key: string;
  /**
   * Fires with a LockLostError (code ERR_LOCK_LOST, kind transient) when the lock is lost. A
   * lease adopted onto a job run's controller (RedisLocks.adopt) has that controller's signal,
   * which also fires when the run is cancelled.
   */
  readonly signal: AbortSignal;
  /**
   * Stops renewal and hands the caller what it needs to delete the lock itself in a script of
   * its own (compare the token, then DEL), e.g. together with the job's result. After this,
   * release() does nothing.
   */
  detach(): { readonly redisKey: string; readonly token: string };
  /**
   * The key and token, for a script that must act only while this lease holds (it compares
   * the token first), while the lease goes on renewing itself.
   */
  fence(): { readonly redisKey: string; readonly token: string };
  /**
   * Stops renewal and deletes the lock if it still holds this lease's token. Idempotent (later
   * calls return the first call's promise) and never rejects: true when the key was ours and is
   * now deleted, false when it was not ours any more or Redis failed (the key then lapses by
   * its TTL).
   */
  release(): Promise<boolean>;
}

type LeaseState = 'held' | 'lost' | 'released';

// After a failed renewal, try again this often (as a fraction of the TTL) until the key lapses.
const RETRY_FRACTION = 10;
const MIN_TIMER_MS = 5;

export class RedisLease implements Lease {
  private state: LeaseState = 'held';
  private renewTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private lastRenewalError: unknown;
  private releasing: Promise<boolean> | undefined;
  /** When the SET or renewal last confirmed was sent: the key lives at least ttl from there. */
  private confirmedAt: number;

  /**
   * `sentAt`: performance.now() when the SET that took the lock was sent. `controller`: what
   * a loss aborts (a job run's, shared: workers/run/cancellation.ts); the lease's own by default.
   */
  constructor(
    private readonly client: RedisConnection,
    readonly key: string,
    private readonly redisKey: string,
    private readonly token: string,
    private readonly ttlMs: number,
    sentAt: number,
    private readonly controller = new AbortController(),
  ) {
    // The expiry timer waits for the first renewal when that comes first (the usual case, and
    // every run shorter than ttl/3 ends before it): one timer a lease, not two (bench/queue's
    // profile: a timer's insert and clear, a lock a job). Timers fire in order, so the renewal
    // arms the expiry before the expiry's instant could pass unwatched.
    this.confirmedAt = sentAt;
    if (sentAt + ttlMs - performance.now() <= ttlMs / 3) this.armExpiry(sentAt);
    this.scheduleRenewal(ttlMs / 3);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  release(): Promise<boolean> {
    this.releasing ??= this.releaseOnce();
    return this.releasing;
  }

  detach(): { readonly redisKey: string; readonly token: string } {
    if (this.state === 'held') this.state = 'released';
    this.clearTimers();
    this.releasing ??= Promise.resolve(false);
    return { redisKey: this.redisKey, token: this.token };
  }

  fence(): { readonly redisKey: string; readonly token: string } {
    return { redisKey: this.redisKey, token: this.token };
  }

  private async releaseOnce(): Promise<boolean> {
    if (this.state === 'held') this.state = 'released';
    this.clearTimers();
    // Even after a loss: a key Redis could not renew may still hold our token. The script
    // deletes it only then, never a new owner's.
    try {
      const deleted = await RELEASE_SCRIPT.run(this.client, [this.redisKey], [this.token]);
      return deleted === 1;
    } catch {
      return false;
    }
  }

  private scheduleRenewal(delayMs: number): void {
    this.renewTimer = setTimeout(() => void this.renew(), Math.max(MIN_TIMER_MS, delayMs));
    // A forgotten lease must not keep the process alive; its holder's own work does that.
    this.renewTimer.unref();
  }

  /**
   * The key lapses in Redis no earlier than `sentAt + ttl` (Redis starts the TTL when the
   * command arrives, after we sent it), so past that instant without a confirmed renewal the
   * lock can no longer be counted on: lost, whatever the command in flight may still say.
   */
  private armExpiry(sentAt: number): void {
    clearTimeout(this.expiryTimer);
    const remaining = sentAt + this.ttlMs - performance.now();
    // Already past (the process was frozen, and this renewal's timer was the first to run):
    // lost now, not at a timer that would come after others already due (a libvirt call
    // waiting for the timers to run, src/libvirt/loop-freeze.ts).
    if (remaining <= 0) {
      this.expiryTimer = undefined;
      this.lose('unrenewed');
      return;
    }
    this.expiryTimer = setTimeout(() => this.lose('unrenewed'), remaining);
    this.expiryTimer.unref();
  }

  private async renew(): Promise<void> {
    this.renewTimer = undefined;
    if (this.state !== 'held') return;
    if (this.expiryTimer === undefined) this.armExpiry(this.confirmedAt);
    if (this.state !== 'held') return;
    const sentAt = performance.now();
    let answer: unknown;
    try {
      answer = await RENEW_SCRIPT.run(this.client, [this.redisKey], [this.token, this.ttlMs]);
    } catch (err) {
      // Redis unreachable or refusing: retry until the expiry timer decides.
      this.lastRenewalError = err;
      if (this.state === 'held') this.scheduleRenewal(this.ttlMs / RETRY_FRACTION);
      return;
    }
    if (this.state !== 'held') return;
    if (answer === 1) {
      this.lastRenewalError = undefined;
      this.confirmedAt = sentAt;
      this.armExpiry(sentAt);
      this.scheduleRenewal(this.ttlMs / 3);
    } else {
      this.lose(answer === -1 ? 'taken' : 'expired');
    }
  }

  private lose(reason: LockLossReason): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.clearTimers();
    const cause = reason === 'unrenewed' ? this.lastRenewalError : undefined;
    this.controller.abort(
      new LockLostError(this.key, reason, cause === undefined ? undefined : { cause }),
    );
  }

  private clearTimers(): void {
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    this.renewTimer = undefined;
    this.expiryTimer = undefined;
  }
}
