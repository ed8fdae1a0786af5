// One host's kvm2 instances as libvirt tells of their changes (docs/events.md): the host's
// lifecycle and agent events on a connection of their own (DomainEventStream), each turned into
// what the instance is now (observe.ts) and handed to `publish`; after every (re)connect, a
// resync of every kvm2 domain against what was published, since events from while no link was
// up are never sent. The owner (the worker's watcher) decides what is new: it keeps the last
// published state, so publishing the same observation twice is harmless by design.
//
// Changes of one domain are handled one at a time and in order; different domains in parallel.
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { AgentLifecycleState } from '../../libvirt/domain-events.js';
import { agentEventName, lifecycleEventName } from '../../libvirt/event-names.js';
import { DomainEventStream } from '../../libvirt/event-stream.js';
import { DomainLookupByName, type NonnullDomain } from '../../libvirt/protocol.gen.js';
import type { ProviderContext } from '../core/host-context.js';
import { isNoDomain } from '../core/not-found.js';
import { observeDomain, observeHost, type Observation } from './observe.js';

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
  /** After a change could not be published, resync this much later. */
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

/** How many events of a domain had been heard when a look began. */
interface Mark {
  readonly of: ReadonlyMap<string, number>;
  readonly at: number;
}

const RESYNC_CAUSE: WatchCause = { event: 'resync' };
const RECHECK_CAUSE: WatchCause = { event: 'recheck' };

export class HostWatch {
  readonly #o: HostWatchOptions;
  readonly #stream: DomainEventStream;
  /** Per domain name: the tail of its chain of changes. */
  readonly #chains = new Map<string, Promise<void>>();
  /** Per domain name: events heard so far (a look yields to an event heard after it began). */
  readonly #heard = new Map<string, number>();
  /** Per domain name: lifecycle events heard so far (an agent's event never pre-empts them). */
  readonly #heardLifecycle = new Map<string, number>();
  readonly #rechecks = new Map<string, Recheck>();
  /** The agent connected before the instance was seen without an address: poll fast then. */
  readonly #pendingFast = new Map<string, number>();
  #conn: LibvirtConnection | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(ctx: ProviderContext, options: HostWatchOptions) {
    this.#o = options;
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
    this.#heard.set(name, (this.#heard.get(name) ?? 0) + 1);
    if (lifecycle) this.#heardLifecycle.set(name, (this.#heardLifecycle.get(name) ?? 0) + 1);
    // A lifecycle event's look yields only to a later lifecycle event, never to the agent's.
    const mark = this.#mark(name, lifecycle ? this.#heardLifecycle : this.#heard);
    void this.#serial(name, () => this.#look(conn, dom, cause, mark));
  }

  #mark(name: string, of = this.#heard): Mark {
    return { of, at: of.get(name) ?? 0 };
  }

  /**
   * Reads the domain now and publishes what it is (or that it is gone). A look yields to an
   * event heard for the domain since `mark` (events come in bursts: a destroy is `shutdown`
   * then `stopped`): that event's look comes next and publishes what it finds under its own
   * name. A `shutdown` that finds the domain already off yields too: `stopped` always follows.
   * The agent's connect publishes only an instance it finds `running` (its address came): any
   * other change is a lifecycle event's to announce.
   */
  async #look(
    conn: LibvirtConnection,
    dom: NonnullDomain,
    cause: WatchCause,
    mark: Mark,
  ): Promise<void> {
    const seen = await observeDomain(conn, this.#o.host, dom);
    if (seen === 'foreign' || this.#heardSince(dom.name, mark)) return;
    if (seen === 'gone') {
      this.#forget(dom.name);
      await this.#publish({ host: this.#o.host, name: dom.name, cause });
      return;
    }
    const yields =
      (cause.event === 'shutdown' && seen.state === 'stopped') ||
      (cause.event.startsWith('agent-') && seen.state !== 'running');
    if (!yields)
      await this.#publish({ host: this.#o.host, name: seen.name, cause, observation: seen });
    this.#scheduleRecheck(conn, seen);
  }

  #heardSince(name: string, mark: Mark): boolean {
    return (mark.of.get(name) ?? 0) !== mark.at;
  }

  /** #look by name: a domain libvirt no longer has is gone. */
  async #lookByName(
    conn: LibvirtConnection,
    name: string,
    cause: WatchCause,
    mark: Mark,
  ): Promise<void> {
    let dom: NonnullDomain;
    try {
      ({ dom } = await conn.call(DomainLookupByName, { name }));
    } catch (err) {
      if (!isNoDomain(err)) throw err;
      if (this.#heardSince(name, mark)) return;
      this.#forget(name);
      await this.#publish({ host: this.#o.host, name, cause });
      return;
    }
    await this.#look(conn, dom, cause, mark);
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
      const mark = this.#mark(name);
      void this.#serial(name, () => this.#lookByName(conn, name, RECHECK_CAUSE, mark));
    }, delay);
    recheck.timer.unref();
  }

  #stopRecheck(name: string): void {
    clearTimeout(this.#rechecks.get(name)?.timer);
    this.#rechecks.delete(name);
    this.#pendingFast.delete(name);
  }

  /** A domain gone: nothing kept for its name (short-lived VMs would pile their names up). */
  #forget(name: string): void {
    this.#stopRecheck(name);
    this.#heard.delete(name);
    this.#heardLifecycle.delete(name);
  }

  /** Publishes; a change that could not be recorded is caught up by a resync a little later. */
  async #publish(change: HostChange): Promise<void> {
    try {
      await this.#o.publish(change);
    } catch (err) {
      this.#o.onError?.(err, 'publish');
      this.#retryResync();
    }
  }

  #retryResync(): void {
    if (this.#retryTimer !== undefined || this.#closed) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      const conn = this.#conn;
      if (conn === undefined || conn.isDown || this.#closed) return;
      this.#resync(conn, -1).catch((err: unknown) => {
        this.#o.onError?.(err, 'resync');
        this.#retryResync();
      });
    }, this.#o.retryResyncMs ?? 5_000);
    this.#retryTimer.unref();
  }

  /**
   * Every kvm2 domain on the host against what was published: a change published for each that
   * differs, and `gone` for each published one no longer there. A domain an event arrived for
   * while the listing was read is left to that event's own look, which is newer.
   */
  async #resync(conn: LibvirtConnection, reconnects: number): Promise<void> {
    this.#conn = conn;
    const marks = new Map<string, Mark>();
    const markOf = (name: string): Mark => marks.get(name) ?? { of: this.#heard, at: 0 };
    for (const name of this.#heard.keys()) marks.set(name, this.#mark(name));
    const { observed, skipped } = await observeHost(conn, this.#o.host, {
      onSkipped: (name, err) => this.#o.onError?.(err, `resync: domain '${name}' unreadable`),
    });
    const present = new Set<string>([...skipped, ...observed.map((o) => o.name)]);
    const looks: Promise<void>[] = [];
    for (const seen of observed) {
      looks.push(
        this.#serial(seen.name, async () => {
          if (this.#heardSince(seen.name, markOf(seen.name))) return;
          await this.#publish({
            host: this.#o.host,
            name: seen.name,
            cause: RESYNC_CAUSE,
            observation: seen,
          });
          this.#scheduleRecheck(conn, seen);
        }),
      );
    }
    for (const name of await this.#o.published()) {
      if (present.has(name)) continue;
      // Published as present, not listed: gone, unless it is there after all when asked.
      const mark = markOf(name);
      looks.push(this.#serial(name, () => this.#lookByName(conn, name, RESYNC_CAUSE, mark)));
    }
    // A look that failed has been reported; a lost link ends this connection anyway.
    await Promise.allSettled(looks);
    this.#o.onResynced?.(reconnects, observed.length);
  }

  /** Runs `task` after the domain's earlier changes; its failure is reported, not thrown on. */
  #serial(name: string, task: () => Promise<void>): Promise<void> {
    const tail = this.#chains.get(name) ?? Promise.resolve();
    const next = tail.then(task);
    const settled = next.catch((err: unknown) => {
      if (!this.#closed) this.#o.onError?.(err, `domain '${name}'`);
    });
    this.#chains.set(name, settled);
    void settled.then(() => {
      if (this.#chains.get(name) === settled) this.#chains.delete(name);
    });
    return next;
  }
}
