// A host's domain events for as long as it is wanted, across lost links: a connection of its
// own, the lifecycle (and agent) subscriptions on it, and after a link is lost — libvirtd
// restarted, the host rebooted, sshd cut the session — a new dial and the subscriptions made
// again (kubevirt lost its callbacks on reconnect and its events silently stopped: issue #194).
// Events that happened while no link was up are never sent, so every (re)connect is reported to
// the owner (`onConnected`), whose moment it is to list the domains and catch up.
import type { LibvirtConnection } from './connection.js';
import {
  subscribeAgentLifecycle,
  subscribeLifecycle,
  type DomainEventSubscription,
} from './domain-events.js';
import type {
  DomainEventCallbackAgentLifecycleMsg,
  DomainEventLifecycleMsg,
} from './protocol.gen.js';

export interface DomainEventStreamOptions {
  /** Makes the stream's own connection (not a shared one: the stream closes it). */
  readonly dial: (signal: AbortSignal) => Promise<LibvirtConnection>;
  /** Each event with the connection it came on, to read the domain's state through. */
  readonly onLifecycle: (event: DomainEventLifecycleMsg, conn: LibvirtConnection) => void;
  readonly onAgent?:
    | ((
        event: Omit<DomainEventCallbackAgentLifecycleMsg, 'callbackID'>,
        conn: LibvirtConnection,
      ) => void)
    | undefined;
  /** After each (re)connect, once subscribed: events from before it may have been missed. */
  readonly onConnected?:
    ((conn: LibvirtConnection, reconnects: number) => Promise<void> | void) | undefined;
  /** A dial, subscription or onConnected that failed; the stream tries again after a pause. */
  readonly onError?: ((err: unknown) => void) | undefined;
  /**
   * The pause after a failure, or after a link lost within retryMaxMs of its connect: from
   * retryMinMs, doubling up to retryMaxMs.
   */
  readonly retryMinMs?: number | undefined;
  readonly retryMaxMs?: number | undefined;
}

export class DomainEventStream {
  readonly #options: DomainEventStreamOptions;
  readonly #stop = new AbortController();
  #running: Promise<void> | undefined;

  constructor(options: DomainEventStreamOptions) {
    this.#options = options;
  }

  /** Starts connecting; events flow once the first connect has subscribed. */
  start(): void {
    this.#running ??= this.#run();
  }

  /** Stops: the subscriptions are closed with the connection, and no new dial is made. */
  async close(): Promise<void> {
    this.#stop.abort(new Error('event stream closed'));
    await this.#running;
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    const min = this.#options.retryMinMs ?? 500;
    const max = this.#options.retryMaxMs ?? 15_000;
    let pause = min;
    for (let connects = 0; !signal.aborted;) {
      try {
        const upForMs = await this.#connectOnce(connects, signal);
        connects += 1;
        if (upForMs >= max) {
          pause = min; // it was up a while: the next loss starts the pauses afresh
          continue;
        }
        // Lost soon after it came up (a session cut at once, an event that kills the link):
        // pause as after a failure, or each connect's loss would be at once another dial,
        // subscription and full resync, thousands a second.
        await sleep(pause, signal);
        pause = Math.min(max, pause * 2);
      } catch (err) {
        if (signal.aborted) break;
        this.#options.onError?.(err);
        await sleep(pause, signal);
        pause = Math.min(max, pause * 2);
      }
    }
  }

  /**
   * One connection's life: dial, subscribe, report, then wait for the link to end. Resolves
   * with how long the link was up, in ms.
   */
  async #connectOnce(connects: number, signal: AbortSignal): Promise<number> {
    const conn = await this.#options.dial(signal);
    const upAt = performance.now();
    // A link that died before this listener was attached has already said so.
    const lost = conn.isDown
      ? Promise.resolve()
      : new Promise<void>((resolve) => conn.once('close', () => resolve()));
    const subscriptions: DomainEventSubscription[] = [];
    try {
      const { onLifecycle, onAgent } = this.#options;
      subscriptions.push(await subscribeLifecycle(conn, (e) => onLifecycle(e, conn), { signal }));
      if (onAgent !== undefined) {
        subscriptions.push(
          await subscribeAgentLifecycle(conn, (e) => onAgent(e, conn), { signal }),
        );
      }
      await this.#options.onConnected?.(conn, connects);
      await sleep(Infinity, signal, lost);
      return performance.now() - upAt;
    } finally {
      await Promise.allSettled(subscriptions.map((s) => s.close()));
      await conn.close().catch(() => undefined);
    }
  }
}

/**
 * Resolves after `ms` (Infinity: never), when `signal` fires or when `until` settles, and lets
 * go of the signal then: the stream's one signal lives as long as the stream, across every
 * pause and connection.
 */
async function sleep(ms: number, signal: AbortSignal, until?: Promise<void>): Promise<void> {
  if (signal.aborted) return;
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => (wake = resolve));
  const timer = ms === Infinity ? undefined : setTimeout(wake, ms);
  signal.addEventListener('abort', wake, { once: true });
  try {
    await Promise.race(until === undefined ? [woken] : [woken, until]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', wake);
  }
}
