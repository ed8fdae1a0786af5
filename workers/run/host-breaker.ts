// A host this worker cannot reach (its sshd down, libvirtd's socket gone, the machine away)
// costs nothing while it is away (issue #15, docs/workers.md "A host that is down"). The first
// job of the host whose dial fails that way pauses this process's worker for the host's queue:
// the host's other jobs stay in the queue, not taken, so they spend no attempt, write no
// `retrying` result and take no CPU from the other hosts' jobs. A probe dials the host after a
// pause that starts at 1 s and doubles up to 15 s; once a dial succeeds the queue resumes and
// its jobs run. Other hosts' queues are never touched, and nothing is shared between processes:
// each finds out by its own first failed dial.
import type { Logger } from 'pino';
import { DialError } from '../../src/libvirt/transport/dial-error.js';

/** What the breaker does to a host's queue and how it learns the host is back. */
export interface HostBreakerHooks {
  /** Stops taking the host's jobs (jobs already running finish as they will). */
  readonly pause: (host: string) => Promise<void>;
  readonly resume: (host: string) => Promise<void>;
  /** Resolves once the host answers a dial; rejects while it does not. */
  readonly probe: (host: string) => Promise<void>;
  readonly logger: Logger;
  /** Told each time a host's queue pauses (true) or resumes (false). */
  readonly onChange?: ((host: string, open: boolean) => void) | undefined;
}

export const FIRST_PROBE_MS = 1_000;
export const MAX_PROBE_MS = 15_000;

/** The reasons a dial gives when the host is not there to answer (not a refusal of ours). */
const AWAY: ReadonlySet<string> = new Set(['unreachable', 'timeout', 'socket_unavailable']);

// Bounded like classify's walk: cause chains are short, and a cycle must not hang.
const MAX_CAUSES = 16;

/** The dial failure in `err` or its causes that says the host is away, if any. */
export function hostAway(err: unknown): DialError | undefined {
  let e: unknown = err;
  for (let i = 0; i < MAX_CAUSES && e !== undefined && e !== null; i++) {
    if (e instanceof DialError) return AWAY.has(e.reason) ? e : undefined;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

interface Open {
  waitMs: number;
  timer: NodeJS.Timeout | undefined;
}

export class HostBreakers {
  readonly #hooks: HostBreakerHooks;
  readonly #open = new Map<string, Open>();
  #closed = false;

  constructor(hooks: HostBreakerHooks) {
    this.#hooks = hooks;
  }

  /** Whether the host's queue is paused here because the host is away. */
  isOpen(host: string): boolean {
    return this.#open.has(host);
  }

  /** The hosts whose queues are paused now. */
  openHosts(): string[] {
    return [...this.#open.keys()];
  }

  /**
   * A job of `host` failed with `err`: when the error says the host is away, its queue pauses
   * and probing starts (already paused: nothing more). Returns whether it did say so.
   */
  failed(host: string, err: unknown): boolean {
    const away = hostAway(err);
    if (away === undefined || this.#closed) return false;
    if (this.#open.has(host)) return true;
    const open: Open = { waitMs: FIRST_PROBE_MS, timer: undefined };
    this.#open.set(host, open);
    this.#hooks.logger.warn(
      { host, stage: away.stage, reason: away.reason, err: away.message },
      'host away: its queue pauses here until a dial succeeds',
    );
    this.#hooks.onChange?.(host, true);
    this.#hooks.pause(host).catch((e: unknown) => {
      this.#hooks.logger.warn({ host, err: String(e) }, 'host away: pausing its queue failed');
    });
    this.#schedule(host, open);
    return true;
  }

  /** Stops probing; paused queues stay as they are (the worker is closing). */
  close(): void {
    this.#closed = true;
    for (const open of this.#open.values()) clearTimeout(open.timer);
  }

  #schedule(host: string, open: Open): void {
    open.timer = setTimeout(() => {
      void this.#probe(host, open);
    }, open.waitMs);
    open.timer.unref();
  }

  async #probe(host: string, open: Open): Promise<void> {
    if (this.#closed) return;
    try {
      await this.#hooks.probe(host);
    } catch (err) {
      // Any other failure (a refused key, say) is the host answering: its jobs say the rest.
      if (this.#closed) return;
      if (hostAway(err) === undefined) return this.#back(host);
      open.waitMs = Math.min(open.waitMs * 2, MAX_PROBE_MS);
      this.#hooks.logger.debug(
        { host, err: err instanceof Error ? err.message : String(err), nextMs: open.waitMs },
        'host still away',
      );
      this.#schedule(host, open);
      return;
    }
    if (!this.#closed) await this.#back(host);
  }

  async #back(host: string): Promise<void> {
    this.#open.delete(host);
    this.#hooks.logger.info({ host }, 'host back: its queue resumes');
    this.#hooks.onChange?.(host, false);
    await this.#hooks.resume(host).catch((e: unknown) => {
      this.#hooks.logger.warn({ host, err: String(e) }, 'host back: resuming its queue failed');
    });
  }
}
