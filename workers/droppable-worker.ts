// Ending BullMQ workers and Redis connections without Redis, for a shutdown's last step and a
// start cut short (docs/workers.md, "Shutdown"). BullMQ's Worker.close(force) keeps the promise
// of its first call: once a graceful close waits on Redis (during an outage, for ever: it
// disconnects its blocking connection and waits for an `end` that a socketless ioredis client
// never emits), a later close(true) returns that same promise, and the worker's lock-renewal
// timer, its stalled-job check and its blocking connection keep the process alive.
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { RedisConnection } from '../queues/redis.js';

/** The ioredis client under a BullMQ connection: BullMQ keeps it protected. */
type WrappedClient = { readonly _client?: RedisConnection };
/** ioredis's own (private) rejection of every command it holds. */
type Flushable = { flushQueue?: (err: Error) => void };

/** A BullMQ Worker that can be ended at once, asking Redis nothing. */
export class DroppableWorker extends Worker {
  /**
   * Stops the worker's timers and drops its blocking connection; idempotent. A close under way
   * goes on, and ends (or never does) without holding the process.
   */
  drop(): void {
    void this.lockManager.close();
    // Ends the stalled-job check's wait, which close() only ends once everything else is done.
    this.pause(true).catch(() => undefined);
    const blocking = this.getBackend().blockingConnection as WrappedClient | undefined;
    if (blocking?._client !== undefined) dropConnection(blocking._client);
  }
}

/**
 * Closes an ioredis connection at once, without QUIT. ioredis parks a client that is waiting
 * to reconnect when told to disconnect (its retry timer cleared, no `close`, status left at
 * `reconnecting`), so the commands it holds would never settle, and BullMQ's watchdog on a
 * pending BZPOPMIN would hold the process for up to 11 s: they are rejected here.
 */
export function dropConnection(client: RedisConnection): void {
  // An ended connection is left alone (ioredis would wait 2 s for its closed socket again),
  // but for a Sentinel one's failover detector, which only disconnect() closes (closeConnection).
  if (client.status === 'end' && !(client instanceof Redis && client.options.sentinels)) return;
  client.disconnect();
  if (client.status === 'reconnecting') {
    (client as unknown as Flushable).flushQueue?.(new Error('Connection is closed.'));
  }
}
