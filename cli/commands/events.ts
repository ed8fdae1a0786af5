// kvm2 events: syntax and help; actions/events.ts runs it.
import { defineCommand } from '../options/command.js';
import { streamViewOptions } from './stream-options.js';

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
    ...streamViewOptions('events'),
    instance: { type: 'string', value: 'ID', description: 'only this instance (host/name)' },
  },
  load: () => import('../actions/events.js'),
});
