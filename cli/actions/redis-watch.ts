// Whether Redis can be reached while a --wait goes on. The client's wait rides out an outage
// for ever (by design, for the library), which on a terminal reads as a hang: the CLI checks
// Redis on a connection of its own and says once per outage that it is still waiting.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  connectProducer,
  createProducerConnection,
  redisEndpoint,
  type RedisTarget,
} from '../../queues/redis.js';
import type { CliIo } from '../terminal/io.js';

const CHECK_EVERY_MS = 1_000;
/** How long Redis must have been away before the line is printed: a blip says nothing. */
const NOTICE_AFTER_MS = 3_000;

export interface RedisWatch {
  /** Stops checking and drops the connection at once (a PING in flight is not waited for). */
  stop(): Promise<void>;
}

/** `beforeNotice` runs just before the line is printed (to erase a progress line). */
export function watchRedis(target: RedisTarget, io: CliIo, beforeNotice?: () => void): RedisWatch {
  const stopping = new AbortController();
  const redis = createProducerConnection(target);
  redis.on('error', () => {
    // Told by the notice below, once the outage has lasted.
  });
  // A producer connection: while ioredis reconnects both fail at once, and a PING a hung Redis
  // does not answer fails at the connection's command timeout.
  const reachable = (): Promise<boolean> =>
    connectProducer(redis, target)
      .then(() => redis.ping())
      .then(
        () => true,
        () => false,
      );

  const watch = async (): Promise<void> => {
    let awaySince: number | undefined;
    let told = false;
    while (!stopping.signal.aborted) {
      const checkedAt = Date.now();
      const up = await reachable();
      if (stopping.signal.aborted) return;
      if (up) {
        awaySince = undefined;
        told = false;
      } else {
        awaySince ??= checkedAt;
        if (!told && Date.now() - awaySince >= NOTICE_AFTER_MS) {
          told = true;
          beforeNotice?.();
          io.err(`kvm2: redis at ${redisEndpoint(target)} unreachable, still waiting…`);
        }
      }
      await sleep(CHECK_EVERY_MS, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  };

  const watching = watch();
  return {
    async stop() {
      stopping.abort();
      redis.disconnect();
      await watching;
    },
  };
}
