// kvm2 events: the instance events of the results stream (docs/events.md), read without a
// consumer group (stream-view.ts); --instance keeps one instance's; --follow until Ctrl-C.
import { parseInstanceEvent, type InstanceEventEntry } from '../../queues/events.js';
import { parseInstanceId } from '../../src/provider/core/ids.js';
import type { ParsedArgs } from '../options/args.js';
import { formatTime } from '../terminal/format.js';
import type { CliIo } from '../terminal/io.js';
import { runStreamView } from './stream-view.js';

export function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const instance = args.string('instance');
  if (instance !== undefined) {
    try {
      parseInstanceId(instance);
    } catch (err) {
      throw args.usageError(`option --instance: ${(err as Error).message}`);
    }
  }
  return runStreamView<InstanceEventEntry>(args, io, {
    parse: (id, fields) => {
      const event = parseInstanceEvent(id, fields);
      return instance === undefined || event?.instanceId === instance ? event : undefined;
    },
    header: ['TIME', 'INSTANCE', 'STATE', 'PREVIOUS', 'EVENT', 'ADDRESS', 'UID'],
    widths: [24, 24, 12, 12, 22, 15],
    row: (e) => [
      formatTime(e.timestamp),
      e.instanceId,
      e.state,
      e.previous,
      e.detail === undefined ? e.event : `${e.event}/${e.detail}`,
      e.address,
      e.uid,
    ],
  });
}
