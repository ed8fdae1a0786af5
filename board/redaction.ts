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
 * telling (an error message often quotes one line of a YAML document). Longest first, so a
 * whole value is replaced before its lines.
 */
export function secretFragments(name: string, data: unknown): string[] {
  const fragments = new Set<string>();
  for (const value of secretValues(name, data)) {
    for (const fragment of [value, ...value.split(/\r?\n/).map((line) => line.trim())]) {
      if (fragment.length >= MIN_FRAGMENT_LENGTH) fragments.add(fragment);
    }
  }
  return [...fragments].sort((a, b) => b.length - a.length);
}

/** The text with every fragment replaced by `[redacted]`. */
export function scrubText(text: string, fragments: readonly string[]): string {
  let scrubbed = text;
  for (const fragment of fragments) scrubbed = scrubbed.split(fragment).join(REDACTED);
  return scrubbed;
}

interface FailureText {
  readonly failedReason: string;
  readonly stacktrace: string[] | null;
}

/** A job's failure text (BullMQ's failedReason and stack trace) with its secrets scrubbed. */
export function scrubFailure<J extends FailureText>(job: J, fragments: readonly string[]): J {
  if (fragments.length === 0) return job;
  return {
    ...job,
    // BullMQ leaves failedReason undefined on a job that never failed, whatever its type says.
    failedReason:
      typeof job.failedReason === 'string'
        ? scrubText(job.failedReason, fragments)
        : job.failedReason,
    stacktrace:
      job.stacktrace?.map((line) =>
        typeof line === 'string' ? scrubText(line, fragments) : line,
      ) ?? job.stacktrace,
  };
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
