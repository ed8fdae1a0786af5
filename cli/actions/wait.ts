// --wait for create, delete and gc: the job's final result from the results stream (SPEC §8),
// told as the outcome, with status 0 only when it succeeded. Ctrl-C stops the wait, never the
// job.
import type { Kvm2Client } from '../../queues/client.js';
import type { ResultEntry } from '../../queues/results.js';
import { EXIT, InterruptedError } from '../terminal/errors.js';
import { keyValues, oneLine } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';
import { showProgress, type ProgressTarget } from './progress.js';
import { onStopSignal } from '../terminal/signals.js';

export async function waitForFinal(
  client: Kvm2Client,
  jobId: string,
  io: CliIo,
  progress?: ProgressTarget,
): Promise<ResultEntry> {
  const stop = new AbortController();
  const removeHandler = onStopSignal(() =>
    stop.abort(new InterruptedError(`stopped waiting; job ${jobId} carries on`)),
  );
  const display = progress !== undefined && io.stderrIsTTY ? showProgress(io, progress) : undefined;
  try {
    return await client.waitFor(jobId, { signal: stop.signal });
  } catch (err) {
    throw stop.signal.aborted ? stop.signal.reason : err;
  } finally {
    removeHandler();
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
