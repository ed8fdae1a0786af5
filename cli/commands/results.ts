// kvm2 results: syntax and help; actions/results.ts runs it.
import { defineCommand } from '../options/command.js';
import { streamViewOptions } from './stream-options.js';

export const resultsCommand = defineCommand({
  name: 'results',
  usage: 'results [--follow] [--json] [--from ID] [--count N]',
  summary: 'print entries of the results stream, or follow it',
  description: [
    'One line per entry: time, job id, op, instance, outcome, error kind, state, address,',
    'message. --json prints one JSON object per line. Without --from, the newest N entries;',
    'with --from, up to N entries after that stream id (0 for the oldest). Reading uses no',
    'consumer group: it takes nothing away from upstream consumers.',
  ],
  json: true,
  options: {
    ...streamViewOptions('entries'),
  },
  load: () => import('../actions/results.js'),
});
