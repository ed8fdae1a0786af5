// --wait for create, delete and gc: the job's final result from the results stream (SPEC §8),
// told as the outcome, with status 0 only when it succeeded. Ctrl-C stops the wait, never the
// job; so does --timeout (status 124). While Redis cannot be reached, standard error says so.
import type { Kvm2Client } from '../../queues/client.js';
import type { RedisTarget } from '../../queues/redis.js';
import type { ResultEntry } from '../../queues/results.js';
import { Kvm2Error } from '../../src/errors/error.js';
import { isKinded } from '../../src/errors/kind.js';
import { parseDuration } from '../../src/provider/config/values.js';
import type { ParsedArgs } from '../options/args.js';
import { EXIT, InterruptedError } from '../terminal/errors.js';
import { formatDuration, keyValues, oneLine } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';
import { showProgress, type ProgressTarget } from './progress.js';
import { watchRedis } from './redis-watch.js';
import { onStopSignal } from '../terminal/signals.js';

/** Erase the line and go back to its start (a progress line, before the notice). */
const CLEAR_LINE = '\r\x1b[2K';

export interface WaitOptions {
  /** Give up after this long (ERR_WAIT_TIMEOUT, status 124). Undefined: no end. */
  readonly timeoutMs?: number | undefined;
  /** Where Redis is: while the wait cannot reach it, one line on standard error says so. */
  readonly redis?: RedisTarget | undefined;
  /** create's progress line, drawn when standard error is a terminal. */
  readonly progress?: ProgressTarget | undefined;
}

/**
 * `--timeout DURATION` (30s, 10m, 2h, 1d or 1h30m, as --grace): only with --wait, more than 0.
 * Checked with the other flags, before anything is dialed.
 */
export function waitTimeoutMs(args: ParsedArgs): number | undefined {
  const text = args.string('timeout');
  if (text === undefined) return undefined;
  if (!args.flag('wait')) throw args.usageError('option --timeout needs --wait');
  const ms = parseDuration(text);
  if (ms === undefined || !Number.isFinite(ms)) {
    throw args.usageError(
      `option --timeout must be a duration like 30s, 10m, 2h or 1d, got '${text}'`,
    );
  }
  const rounded = Math.round(ms);
  if (rounded <= 0) throw args.usageError(`option --timeout must be more than 0, got '${text}'`);
  return rounded;
}

export async function waitForFinal(
  client: Kvm2Client,
  jobId: string,
  io: CliIo,
  options: WaitOptions = {},
): Promise<ResultEntry> {
  const { timeoutMs, progress } = options;
  const stop = new AbortController();
  const removeHandler = onStopSignal(() =>
    stop.abort(new InterruptedError(`stopped waiting; job ${jobId} carries on`)),
  );
  const display = progress !== undefined && io.stderrIsTTY ? showProgress(io, progress) : undefined;
  const watch =
    options.redis === undefined
      ? undefined
      : watchRedis(options.redis, io, () => {
          if (display !== undefined) io.errRaw(CLEAR_LINE);
        });
  try {
    return await client.waitFor(jobId, { signal: stop.signal, timeoutMs });
  } catch (err) {
    if (stop.signal.aborted) throw stop.signal.reason;
    if (timeoutMs !== undefined && isKinded(err) && err.code === 'ERR_WAIT_TIMEOUT') {
      throw new Kvm2Error(
        'ERR_WAIT_TIMEOUT',
        `no final result for job ${jobId} within ${formatDuration(timeoutMs)}; the job carries on`,
        { cause: err },
      );
    }
    throw err;
  } finally {
    removeHandler();
    await watch?.stop();
    await display?.stop();
  }
}

/** Prints the final result; the exit status is 0 for succeeded, 1 for failed or superseded. */
export function reportFinal(result: ResultEntry, io: CliIo, json: boolean): number {
  if (json) {
    printJson(io, result);
  } else {
    io.out(
      ...keyValues([
        ['outcome', result.outcome],
        ...(result.instanceId === undefined ? [] : [['instance', result.instanceId] as const]),
        ...(result.state === undefined ? [] : [['state', result.state] as const]),
        ...(result.address === undefined ? [] : [['address', result.address] as const]),
        ...(result.message === undefined ? [] : [['message', result.message] as const]),
      ]),
    );
  }
  if (result.outcome === 'succeeded') return EXIT.ok;
  const what = `${result.op} ${result.instanceId ?? `job ${result.jobId}`}`;
  if (result.outcome === 'superseded') {
    io.err(`kvm2: ${what} was superseded by a newer request for the same instance`);
  } else {
    const code = result.errorCode === undefined ? '' : ` (${result.errorCode})`;
    const message = result.message === undefined ? '' : `: ${oneLine(result.message)}`;
    io.err(`kvm2: ${what} failed: ${result.errorKind ?? 'unknown'}${code}${message}`);
  }
  return EXIT.failure;
}
