// What the dashboard must never show (SPEC §8): a job's user-data and network-config. The data
// and returnValue formatters hide those fields wherever bull-board renders a job; the helpers
// here cover the rest of what it serves: job scheduler templates (raw job data) and the free
// text a worker wrote (failedReason, stack trace, job logs), which no formatter reaches.
import { REDACTED, redactJobData } from '../queues/registry.js';

/**
 * Fragments shorter than this are left alone in free text: `runcmd:` or `users:` would
 * otherwise blank out ordinary words of an error message.
 */
const MIN_FRAGMENT_LENGTH = 8;

/** Formatter for `data` and `returnValue`: the registry's redaction, for any job name. */
export function redactField(value: unknown): unknown {
  return redactJobData('', value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The secret values a job carries, as redactJobData sees them: the fields it replaces. Asking
 * the registry keeps one list of secret fields.
 */
function secretValues(name: string, data: unknown): string[] {
  const redacted = redactJobData(name, data);
  if (redacted === data || !isRecord(data) || !isRecord(redacted)) return [];
  return Object.keys(data)
    .filter((key) => redacted[key] === REDACTED && data[key] !== REDACTED)
    .map((key) => data[key])
    .filter((value) => value !== undefined && value !== null && value !== '')
    .map((value) => (typeof value === 'string' ? value : JSON.stringify(value)));
}

/**
 * What to cut out of free text: each secret whole and each of its lines, when long enough to be
 * telling (an error message often quotes one line of a YAML document).
 */
function secretFragments(name: string, data: unknown): Set<string> {
  const fragments = new Set<string>();
  for (const value of secretValues(name, data)) {
    for (const fragment of [value, ...value.split(/\r?\n/).map((line) => line.trim())]) {
      if (fragment.length >= MIN_FRAGMENT_LENGTH) fragments.add(fragment);
    }
  }
  return fragments;
}

/** How many scrubbed texts a scrubber remembers: a failure's reason, its stack, a few logs. */
const RECENT_TEXTS = 16;

interface FailureText {
  readonly failedReason: string;
  readonly stacktrace: string[] | null;
}

/**
 * Cuts one job's secrets out of text. Made once per job (the board caches it): user-data at its
 * 1 MiB limit has tens of thousands of lines, and trying each of them against every text on
 * every poll blocked the board for a tenth of a second per job. Fragments are indexed by their
 * first MIN_FRAGMENT_LENGTH characters, so a scan looks each position of the text up once, and
 * takes the longest fragment that starts there (a whole value before its first line).
 */
export class Scrubber {
  static readonly EMPTY = new Scrubber(new Set());

  readonly #byPrefix = new Map<string, string[]>();
  /** The last texts scrubbed: a poll shows the same failure text as the one before. */
  readonly #recent = new Map<string, string>();

  constructor(fragments: ReadonlySet<string>) {
    for (const fragment of fragments) {
      const key = fragment.slice(0, MIN_FRAGMENT_LENGTH);
      const list = this.#byPrefix.get(key);
      if (list === undefined) this.#byPrefix.set(key, [fragment]);
      else list.push(fragment);
    }
    for (const list of this.#byPrefix.values()) list.sort((a, b) => b.length - a.length);
  }

  /** The scrubber for a job's secrets, as the registry's redaction names them. */
  static forJob(name: string, data: unknown): Scrubber {
    const fragments = secretFragments(name, data);
    return fragments.size === 0 ? Scrubber.EMPTY : new Scrubber(fragments);
  }

  get empty(): boolean {
    return this.#byPrefix.size === 0;
  }

  /** The text with every fragment replaced by `[redacted]`. */
  scrub(text: string): string {
    if (this.empty || text.length < MIN_FRAGMENT_LENGTH) return text;
    const known = this.#recent.get(text);
    if (known !== undefined) return known;
    const scrubbed = this.#scan(text);
    if (this.#recent.size >= RECENT_TEXTS) this.#recent.clear();
    this.#recent.set(text, scrubbed);
    return scrubbed;
  }

  #scan(text: string): string {
    let out = '';
    let copied = 0;
    let at = 0;
    while (at <= text.length - MIN_FRAGMENT_LENGTH) {
      const candidates = this.#byPrefix.get(text.slice(at, at + MIN_FRAGMENT_LENGTH));
      const match = candidates?.find((fragment) => text.startsWith(fragment, at));
      if (match === undefined) {
        at += 1;
        continue;
      }
      out += text.slice(copied, at) + REDACTED;
      at += match.length;
      copied = at;
    }
    return copied === 0 ? text : out + text.slice(copied);
  }

  /** A job's failure text (BullMQ's failedReason and stack trace) with its secrets scrubbed. */
  scrubFailure<J extends FailureText>(job: J): J {
    if (this.empty) return job;
    return {
      ...job,
      // BullMQ leaves failedReason undefined on a job that never failed, whatever its type says.
      failedReason:
        typeof job.failedReason === 'string' ? this.scrub(job.failedReason) : job.failedReason,
      stacktrace:
        job.stacktrace?.map((line) => (typeof line === 'string' ? this.scrub(line) : line)) ??
        job.stacktrace,
    };
  }
}

interface SchedulerLike {
  readonly name: string;
  readonly template?: { readonly data?: unknown } | undefined;
}

/** A job scheduler with its template's data redacted: bull-board lists templates raw. */
export function redactScheduler<S extends SchedulerLike>(scheduler: S): S {
  const data = scheduler.template?.data;
  if (data === undefined) return scheduler;
  return {
    ...scheduler,
    template: { ...scheduler.template, data: redactJobData(scheduler.name, data) },
  };
}
