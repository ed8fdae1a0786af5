// kvm2 results: the results stream's job results (SPEC §8, docs/results.md), read without a
// consumer group (stream-view.ts); --follow blocks on XREAD until Ctrl-C.
import { parseResult, type ResultEntry } from '../../queues/results.js';
import type { ParsedArgs } from '../options/args.js';
import { formatTime } from '../terminal/format.js';
import type { CliIo } from '../terminal/io.js';
import { runStreamView } from './stream-view.js';

export function run(args: ParsedArgs, io: CliIo): Promise<number> {
  return runStreamView<ResultEntry>(args, io, {
    parse: parseResult,
    header: ['TIME', 'JOB', 'OP', 'INSTANCE', 'OUTCOME', 'KIND', 'STATE', 'ADDRESS', 'MESSAGE'],
    widths: [24, 36, 6, 24, 10, 14, 12, 15],
    row: (entry) => [
      formatTime(entry.timestamp),
      entry.jobId,
      entry.op,
      entry.instanceId,
      entry.outcome,
      entry.errorKind,
      entry.state,
      entry.address,
      entry.message,
    ],
  });
}
