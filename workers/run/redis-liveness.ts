// Whether Redis answers the worker's connection, for /readyz (SPEC §8). ioredis stays `ready`
// while a hung server or a partition that drops packets without a reset answers nothing: no
// command times out on this connection (BullMQ's blocking reads need it so), so only a command
// that goes unanswered tells. A PING every period; an answer outstanding past the deadline is
// a Redis that is not answering, until it answers again.
import type { RedisConnection } from '../../queues/redis.js';

/** How often the connection is asked. */
export const LIVENESS_PERIOD_MS = 2_000;
/** How long an unanswered PING may wait before Redis counts as not answering. */
export const LIVENESS_DEADLINE_MS = 6_000;

export class RedisLiveness {
  readonly #redis: RedisConnection;
  readonly #deadlineMs: number;
  readonly #timer: NodeJS.Timeout;
  /** When the PING in flight went out; undefined while none is. */
  #askedAt: number | undefined;

  constructor(
    redis: RedisConnection,
    periodMs = LIVENESS_PERIOD_MS,
    deadlineMs = LIVENESS_DEADLINE_MS,
  ) {
    this.#redis = redis;
    this.#deadlineMs = deadlineMs;
    this.#timer = setInterval(() => this.#ask(), periodMs);
    this.#timer.unref();
  }

  /** False while a PING has gone unanswered for longer than the deadline. */
  answering(now = Date.now()): boolean {
    return this.#askedAt === undefined || now - this.#askedAt < this.#deadlineMs;
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #ask(): void {
    // One at a time: while one waits, its age is the measure. Not while disconnected: the
    // connection's status says that, and the offline queue would only hold the PING.
    if (this.#askedAt !== undefined || this.#redis.status !== 'ready') return;
    this.#askedAt = Date.now();
    const answered = (): void => {
      this.#askedAt = undefined;
    };
    // A reply or an error (the connection dropped it) both end the wait.
    this.#redis.ping().then(answered, answered);
  }
}
