// One host's kvm2 instances as libvirt tells of their changes (docs/events.md): the host's
// lifecycle and agent events on a connection of their own (DomainEventStream), each turned into
// what the instance is now (observe.ts) and handed to `publish`; after every (re)connect, a
// resync of every domain against what was published, since events from while no link was up
// are never sent (and again a little after any change that could not be read or published). The owner (the worker's watcher) decides what is new: it keeps the last
// published state, so publishing the same observation twice is harmless by design.
//
// Changes of one domain are handled one at a time and in order; different domains in parallel.
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { AgentLifecycleState } from '../../libvirt/domain-events.js';
import { agentEventName, lifecycleEventName } from '../../libvirt/event-names.js';
import { DomainEventStream } from '../../libvirt/event-stream.js';
import {
  ConnectListAllDomains,
  DomainLookupByName,
  type NonnullDomain,
} from '../../libvirt/protocol.gen.js';
import type { ProviderContext } from '../core/host-context.js';
import { NAME_PATTERN } from '../core/ids.js';
import { isNoDomain } from '../core/not-found.js';
import { observeDomain, type Observation } from './observe.js';
import { XmlError } from '../xml/types.js';

/** What made the watcher look: libvirt's event and detail, or `resync`. */
export interface WatchCause {
  readonly event: string;
  readonly detail?: string | undefined;
}

/** One domain's change: what it is now, or (no observation) that it no longer exists. */
export interface HostChange {
  readonly host: string;
  readonly name: string;
  readonly cause: WatchCause;
  readonly observation?: Observation | undefined;
}

export interface HostWatchOptions {
  readonly host: string;
  /** Records one change (or finds it is no change); rejects when it could not. */
  readonly publish: (change: HostChange) => Promise<void>;
  /** Names whose last published change was not `gone`: a resync checks each still exists. */
  readonly published: () => Promise<Iterable<string>>;
  readonly onError?: ((err: unknown, during: string) => void) | undefined;
  /** After each (re)connect's resync. */
  readonly onResynced?: ((reconnects: number, observed: number) => void) | undefined;
  /** A running instance without an address is looked at again this often… */
  readonly recheckMs: number;
  /** …for this long after it was first seen so (the create's address timeout). */
  readonly recheckForMs: number;
  /** After the agent connects, look this often for the address it reports… */
  readonly agentPollMs?: number | undefined;
  /** …for this long. */
  readonly agentPollForMs?: number | undefined;
  /** After a change could not be read or published, resync this much later (doubling). */
  readonly retryResyncMs?: number | undefined;
  readonly retryMinMs?: number | undefined;
  readonly retryMaxMs?: number | undefined;
}

interface Recheck {
  /** When the instance was first seen running without an address. */
  readonly since: number;
  /** Poll fast (agentPollMs) until then: the agent just connected. */
  fastUntil: number;
  timer?: NodeJS.Timeout | undefined;
}

/**
 * Where a look stands among the events: it yields to any event of its domain heard after `at`
 * (of the lifecycle only, for a lifecycle event's own look: the agent's never pre-empt them).
 */
interface Mark {
  readonly lifecycleOnly: boolean;
  readonly at: number;
}

/** An event heard, to look at the domain for. */
interface HeardEvent {
  readonly conn: LibvirtConnection;
  readonly dom: NonnullDomain;
  readonly cause: WatchCause;
  readonly mark: Mark;
}

/**
 * A domain's events not yet looked at, under one look queued in its chain: the last lifecycle
 * event, and the last agent event heard after it. Every earlier one would only yield to these
 * (#look), so a burst of events (a guest that connects and disconnects its agent in a loop, a
 * daemon sending faster than looks finish) is one look, not a look and its reads per event.
 */
interface QueuedEvents {
  lifecycle?: HeardEvent | undefined;
  agent?: HeardEvent | undefined;
}

/** After a failed read or publish, resync this much later, doubling while resyncs fail. */
const RETRY_RESYNC_MS = 5_000;
const RETRY_RESYNC_MAX_MS = 5 * 60_000;

const RESYNC_CAUSE: WatchCause = { event: 'resync' };
const RECHECK_CAUSE: WatchCause = { event: 'recheck' };

export class HostWatch {
  readonly #o: HostWatchOptions;
  readonly #stream: DomainEventStream;
  /** Per domain name: the tail of its chain of changes. */
  readonly #chains = new Map<string, Promise<void>>();
  /** Per domain name: the events its queued look, not yet begun, is for. */
  readonly #queued = new Map<string, QueuedEvents>();
  /** Events heard so far, on this watch; per domain name, the number of the last one. */
  #heard = 0;
  readonly #lastHeard = new Map<string, number>();
  readonly #lastLifecycle = new Map<string, number>();
  readonly #rechecks = new Map<string, Recheck>();
  /** The agent connected before the instance was seen without an address: poll fast then. */
  readonly #pendingFast = new Map<string, number>();
  #conn: LibvirtConnection | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retrying: Promise<void> | undefined;
  /** Looks and publishes that failed so far: a resync without new ones resets the backoff. */
  #failures = 0;
  #retryDelayMs: number;
  #closed = false;

  constructor(ctx: ProviderContext, options: HostWatchOptions) {
    this.#o = options;
    this.#retryDelayMs = options.retryResyncMs ?? RETRY_RESYNC_MS;
    this.#stream = new DomainEventStream({
      dial: (signal) => ctx.hosts.dedicated(options.host, { signal }),
      onLifecycle: (e, conn) => {
        this.#onEvent(e.dom, conn, lifecycleEventName(e.event, e.detail), true);
      },
      onAgent: (e, conn) => {
        // The agent tells when the address is worth asking for. Its disconnect changes nothing
        // kvm2 publishes by itself: the lifecycle events and the rechecks tell of the rest.
        if (e.state !== AgentLifecycleState.CONNECTED) return;
        const pollUntil = Date.now() + (this.#o.agentPollForMs ?? 10_000);
        const recheck = this.#rechecks.get(e.dom.name);
        if (recheck !== undefined) recheck.fastUntil = pollUntil;
        else this.#pendingFast.set(e.dom.name, pollUntil);
        this.#onEvent(e.dom, conn, agentEventName(e.state, e.reason), false);
      },
      onConnected: (conn, reconnects) => this.#resync(conn, reconnects),
      onError: (err) => this.#o.onError?.(err, 'connect'),
      retryMinMs: options.retryMinMs,
      retryMaxMs: options.retryMaxMs,
    });
  }

  start(): void {
    this.#stream.start();
  }

  /** Stops listening and rechecking; resolves once the changes under way are handled. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    for (const r of this.#rechecks.values()) clearTimeout(r.timer);
    this.#rechecks.clear();
    await this.#stream.close();
    await this.#retrying;
    await Promise.allSettled([...this.#chains.values()]);
  }

  #onEvent(
    dom: NonnullDomain,
    conn: LibvirtConnection,
    cause: WatchCause,
    lifecycle: boolean,
  ): void {
    if (this.#closed) return;
    const name = dom.name;
    const at = ++this.#heard;
    this.#lastHeard.set(name, at);
    if (lifecycle) this.#lastLifecycle.set(name, at);
    const heard: HeardEvent = { conn, dom, cause, mark: { lifecycleOnly: lifecycle, at } };
    const queued = this.#queued.get(name);
    if (queued !== undefined) {
      // A look is queued and has not begun: it looks for this event instead of the one of the
      // same kind before it (an agent event also pre-empts a lifecycle one's agent successor).
      if (lifecycle) {
        queued.lifecycle = heard;
        queued.agent = undefined;
      } else {
        queued.agent = heard;
      }
      return;
    }
    const events: QueuedEvents = lifecycle ? { lifecycle: heard } : { agent: heard };
    this.#queued.set(name, events);
    void this.#serial(name, async () => {
      this.#queued.delete(name);
      for (const e of [events.lifecycle, events.agent]) {
        if (e !== undefined) await this.#look(e.conn, e.dom, e.cause, e.mark);
      }
    });
  }

  /** A look of the watcher's own (a recheck, a resync) yields to any event heard after now. */
  #markNow(): Mark {
    return { lifecycleOnly: false, at: this.#heard };
  }

  /**
   * observeDomain, with kvm2 metadata that cannot be parsed, or on a domain whose name makes no
   * instance id (renamed by hand to one that is not a DNS label), said once per look and the
   * domain left alone like a foreign one: reading it again would not mend it, and treating it
   * as a failed read would resync the host over and over.
   */
  async #observe(
    conn: LibvirtConnection,
    dom: NonnullDomain,
  ): Promise<Observation | 'foreign' | 'gone'> {
    try {
      return await observeDomain(conn, this.#o.host, dom);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (err instanceof XmlError) {
        this.#o.onError?.(err, `domain '${dom.name}': kvm2 metadata unreadable; not watched`);
      } else if (code === 'ERR_INVALID_INSTANCE_ID') {
        this.#o.onError?.(err, `domain '${dom.name}': name is not a DNS label; not watched`);
      } else {
        throw err;
      }
      return 'foreign';
    }
  }

  #heardSince(name: string, mark: Mark): boolean {
    const last = (mark.lifecycleOnly ? this.#lastLifecycle : this.#lastHeard).get(name) ?? 0;
    return last > mark.at;
  }

  /**
   * Reads the domain now and publishes what it is (or that it is gone); true when it is one of
   * kvm2's. A look yields to an event heard for the domain after `mark` (events come in bursts:
   * a destroy is `shutdown` then `stopped`): that event's look comes next and publishes what
   * it finds under its own name. A `shutdown` that finds the domain already off yields too:
   * `stopped` always follows; so does a `defined` that finds it started (`started` follows,
   * or came first), and a recheck that finds qemu still starting it (a recheck scheduled by the
   * define's look fires before `started` when a start takes longer than worker.addressPoll). The agent's connect publishes only an instance it finds
   * `running` (its address came): any other change is a lifecycle event's to announce.
   * `undefined` is the name's end whatever is found: a rename is a new name's `defined`.
   */
  async #look(
    conn: LibvirtConnection,
    dom: NonnullDomain,
    cause: WatchCause,
    mark: Mark,
  ): Promise<boolean> {
    const name = dom.name;
    // A name that is no DNS label was never an instance's (nor published): nothing to end.
    const seen =
      cause.event === 'undefined'
        ? NAME_PATTERN.test(name)
          ? 'gone'
          : 'foreign'
        : await this.#observe(conn, dom);
    if (this.#heardSince(name, mark)) return seen !== 'foreign' && seen !== 'gone';
    if (seen === 'foreign' || seen === 'gone') {
      this.#forget(name);
      if (seen === 'gone') await this.#publish({ host: this.#o.host, name, cause });
      return false;
    }
    const yields =
      (cause.event === 'shutdown' && seen.state === 'stopped') ||
      (cause.event === 'defined' && seen.state !== 'stopped') ||
      (cause.event === 'recheck' && seen.startingUp) ||
      (cause.event.startsWith('agent-') && seen.state !== 'running');
    if (!yields) await this.#publish({ host: this.#o.host, name, cause, observation: seen });
    this.#scheduleRecheck(conn, seen);
    return true;
  }

  /** #look by name: a domain libvirt no longer has is gone. */
  async #lookByName(
    conn: LibvirtConnection,
    name: string,
    cause: WatchCause,
    mark: Mark,
  ): Promise<boolean> {
    let dom: NonnullDomain;
    try {
      ({ dom } = await conn.call(DomainLookupByName, { name }));
    } catch (err) {
      if (!isNoDomain(err)) throw err;
      if (this.#heardSince(name, mark)) return false;
      this.#forget(name);
      await this.#publish({ host: this.#o.host, name, cause });
      return false;
    }
    return this.#look(conn, dom, cause, mark);
  }

  /** A running instance without an address is looked at again until it has one (or time's up). */
  #scheduleRecheck(conn: LibvirtConnection, seen: Observation): void {
    const name = seen.name;
    if (seen.state !== 'provisioning' || this.#closed) {
      this.#stopRecheck(name);
      return;
    }
    const now = Date.now();
    let recheck = this.#rechecks.get(name);
    if (recheck === undefined) {
      recheck = { since: now, fastUntil: this.#pendingFast.get(name) ?? 0 };
      this.#pendingFast.delete(name);
      this.#rechecks.set(name, recheck);
    }
    if (now - recheck.since >= this.#o.recheckForMs) {
      this.#stopRecheck(name);
      return;
    }
    clearTimeout(recheck.timer);
    const fast = now < recheck.fastUntil;
    const delay = fast ? (this.#o.agentPollMs ?? 250) : this.#o.recheckMs;
    recheck.timer = setTimeout(() => {
      // On the watch's link now: the one the look was made on may have been lost since (the
      // resync on the new one looks at the domain again and schedules the next).
      const now = this.#conn ?? conn;
      if (now.isDown) return;
      const mark = this.#markNow();
      void this.#serial(name, () => this.#lookByName(now, name, RECHECK_CAUSE, mark));
    }, delay);
    recheck.timer.unref();
  }

  #stopRecheck(name: string): void {
    clearTimeout(this.#rechecks.get(name)?.timer);
    this.#rechecks.delete(name);
    this.#pendingFast.delete(name);
  }

  /** Nothing kept for a name that is gone or foreign (short-lived VMs would pile names up). */
  #forget(name: string): void {
    this.#stopRecheck(name);
    this.#lastHeard.delete(name);
    this.#lastLifecycle.delete(name);
  }

  /** Publishes; a change that could not be recorded is caught up by a resync a little later. */
  async #publish(change: HostChange): Promise<void> {
    try {
      await this.#o.publish(change);
    } catch (err) {
      this.#failures += 1;
      this.#o.onError?.(err, 'publish');
      this.#retryResync();
    }
  }

  #retryResync(): void {
    if (this.#retryTimer !== undefined || this.#retrying !== undefined || this.#closed) return;
    const delay = this.#retryDelayMs;
    this.#retryDelayMs = Math.min(RETRY_RESYNC_MAX_MS, delay * 2);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      const conn = this.#conn;
      if (conn === undefined || conn.isDown || this.#closed) return;
      this.#retrying = this.#resync(conn, -1)
        .catch((err: unknown) => {
          this.#o.onError?.(err, 'resync');
          this.#retryResync();
        })
        .finally(() => {
          this.#retrying = undefined;
        });
    }, delay);
    this.#retryTimer.unref();
  }

  /**
   * Every domain on the host against what was published: each read again in its own turn
   * (after the changes already queued for it, so never older than they), a change published
   * for each kvm2 instance that differs, and `gone` for each published one no longer there.
   */
  async #resync(conn: LibvirtConnection, reconnects: number): Promise<void> {
    this.#conn = conn;
    const failuresBefore = this.#failures;
    const mark = this.#markNow();
    const { domains } = await conn.call(ConnectListAllDomains, { needResults: 1, flags: 0 });
    const listed = new Set(domains.map((d) => d.name));
    let instances = 0;
    const looks: Promise<void>[] = domains.map((dom) =>
      this.#serial(dom.name, async () => {
        if (await this.#look(conn, dom, RESYNC_CAUSE, mark)) instances += 1;
      }),
    );
    const published = new Set(await this.#o.published());
    for (const name of published) {
      if (listed.has(name)) continue;
      // Published as present, not listed: gone, unless it is there after all when asked.
      looks.push(
        this.#serial(name, async () => {
          if (await this.#lookByName(conn, name, RESYNC_CAUSE, mark)) instances += 1;
        }),
      );
    }
    // What was kept for names that are neither there nor published, nor being looked at.
    for (const name of [...this.#lastHeard.keys(), ...this.#pendingFast.keys()]) {
      if (!listed.has(name) && !published.has(name) && !this.#chains.has(name)) this.#forget(name);
    }
    // A look that failed has been reported, and a resync to catch it up is on its way.
    await Promise.allSettled(looks);
    if (this.#failures === failuresBefore)
      this.#retryDelayMs = this.#o.retryResyncMs ?? RETRY_RESYNC_MS;
    this.#o.onResynced?.(reconnects, instances);
  }

  /**
   * Runs `task` after the domain's earlier changes. Its failure is reported, and a resync a
   * little later reads the domain again: the change it was for is not lost.
   */
  #serial(name: string, task: () => Promise<unknown>): Promise<void> {
    const tail = this.#chains.get(name) ?? Promise.resolve();
    const next = tail.then(async () => {
      await task();
    });
    const settled = next.catch((err: unknown) => {
      if (this.#closed) return;
      this.#failures += 1;
      this.#o.onError?.(err, `domain '${name}'`);
      this.#retryResync();
    });
    this.#chains.set(name, settled);
    void settled.then(() => {
      if (this.#chains.get(name) === settled) this.#chains.delete(name);
    });
    return next;
  }
}
