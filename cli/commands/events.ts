// kvm2 events: syntax and help; actions/events.ts runs it.
import { defineCommand } from '../options/command.js';
import { DEFAULT_RESULTS_COUNT } from '../options/defaults.js';

export const eventsCommand = defineCommand({
  name: 'events',
  usage: 'events [--follow] [--json] [--instance ID] [--from ID] [--count N]',
  summary:
    'print instance events (a VM stopped, paused, came back, got its address), or follow them',
  description: [
    'One line per event: time, instance, state, the state before, libvirt event/detail (or',
    'resync), address, uid. Events are published by the worker watching each host, for',
    "kvm2's own instances only (docs/events.md). --json prints one JSON object per line.",
    'Without --from, the newest N events; with --from, up to N after that stream id. Reading',
    'uses no consumer group: it takes nothing away from upstream consumers.',
  ],
  json: true,
  options: {
    follow: { type: 'boolean', description: 'keep printing new events until Ctrl-C' },
    instance: { type: 'string', value: 'ID', description: 'only this instance (host/name)' },
    from: { type: 'string', value: 'ID', description: 'start after this stream id (0: the start)' },
    count: {
      type: 'string',
      value: 'N',
      description: `at most N events before following (default ${DEFAULT_RESULTS_COUNT})`,
    },
  },
  load: () => import('../actions/events.js'),
});
