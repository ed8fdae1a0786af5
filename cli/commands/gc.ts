// kvm2 gc: syntax and help; actions/gc.ts runs it.
import { defineCommand } from '../options/command.js';
import { DEFAULT_GRACE_MS } from '../options/defaults.js';
import { formatDuration } from '../terminal/format.js';
import { waitOptions } from './wait-options.js';

export const gcCommand = defineCommand({
  name: 'gc',
  usage: 'gc --tag T [--keep ID ...] [--grace DURATION] [--wait [--timeout DURATION]] [--json]',
  summary: "enqueue a GC round: delete a tag's instances not kept and older than the grace",
  description: [
    'Also removes kvm2 overlay and seed volumes whose domain is gone and that are older than',
    `the grace period. DURATION is like 30s, 10m, 2h or 1d (default ${formatDuration(DEFAULT_GRACE_MS)}).`,
    'With --wait, waits for the final result and exits 0 only when it succeeded; --timeout',
    'DURATION gives up waiting, status 124 (the round carries on).',
  ],
  json: true,
  options: {
    tag: { type: 'string', value: 'T', description: 'the tag to collect (required)' },
    keep: {
      type: 'string',
      value: 'ID',
      multiple: true,
      description: 'an instance id to keep (repeatable, or comma-separated)',
    },
    grace: {
      type: 'string',
      value: 'DURATION',
      description: `only instances and volumes older than this (default ${formatDuration(DEFAULT_GRACE_MS)})`,
    },
    ...waitOptions,
  },
  load: () => import('../actions/gc.js'),
});
