// kvm2 gc: enqueue a GC round for a tag (SPEC §8): delete the tag's instances that are not
// kept and older than the grace period, and orphaned kvm2 volumes.
import { Kvm2Client } from '../../queues/client.js';
import { redisTarget } from '../../queues/redis.js';
import { parseInstanceId } from '../../src/provider/core/ids.js';
import { parseDuration } from '../../src/provider/config/values.js';
import type { ParsedArgs } from '../options/args.js';
import { configuredHost, loadCliConfig } from '../options/config.js';
import { DEFAULT_GRACE_MS } from '../options/defaults.js';
import { checkJobFlags, GC_FLAGS } from '../options/job-flags.js';
import { EXIT } from '../terminal/errors.js';
import { formatDuration, keyValues } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';
import { reportFinal, waitForFinal, waitTimeoutMs } from './wait.js';

/** `--grace`: a duration such as 30s, 10m, 2h or 1d (or 1h30m), the config's syntax. */
function graceMs(args: ParsedArgs): number {
  const text = args.string('grace');
  if (text === undefined) return DEFAULT_GRACE_MS;
  const ms = parseDuration(text);
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) {
    throw args.usageError(
      `option --grace must be a duration like 30s, 10m, 2h or 1d, got '${text}'`,
    );
  }
  // The job carries whole milliseconds; past 2^53 they are no longer whole numbers.
  if (!Number.isSafeInteger(Math.round(ms))) {
    throw args.usageError(`option --grace is too long, got '${text}'`);
  }
  return Math.round(ms);
}

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const tag = args.required('tag');
  if (tag === '')
    throw args.usageError('option --tag must not be empty: gc takes a tag on purpose');
  const keep = args.list('keep').map((id) => args.instanceId(id, '--keep'));
  const grace = graceMs(args);
  const json = args.flag('json');
  const timeoutMs = waitTimeoutMs(args);
  checkJobFlags(args, 'gc', { tag, keep, graceMs: grace }, GC_FLAGS);
  const config = await loadCliConfig(args, io);
  // A kept id on a host of no configuration keeps nothing: the instance meant would go.
  for (const id of keep) configuredHost(config, parseInstanceId(id).host, `--keep ${id}`);
  const client = Kvm2Client.fromConfig(config);
  try {
    const { jobId } = await client.gc({ tag, keep, graceMs: grace });
    if (!(json && args.flag('wait'))) {
      if (json) printJson(io, { jobId, tag, keep, graceMs: grace });
      else {
        io.out(
          ...keyValues([
            ['job', jobId],
            ['tag', tag],
            ['keep', keep.length === 0 ? undefined : keep.join(', ')],
            ['grace', formatDuration(grace)],
          ]),
        );
      }
    }
    if (!args.flag('wait')) return EXIT.ok;
    const redis = redisTarget(config.redis);
    return reportFinal(await waitForFinal(client, jobId, io, { timeoutMs, redis }), io, json);
  } finally {
    await client.close();
  }
}
