// kvm2 list: syntax and help; actions/list.ts runs it.
import { defineCommand } from '../options/command.js';

export const listCommand = defineCommand({
  name: 'list',
  usage: 'list --tag T [--json]',
  summary: 'list the instances with a tag, across all hosts',
  description: [
    'Reads every host directly (no worker needed); a host that cannot be listed fails the',
    "command. State is running or stopped only; use 'kvm2 get ID' for the address.",
  ],
  json: true,
  options: { tag: { type: 'string', value: 'T', description: 'the tag (required)' } },
  load: () => import('../actions/list.js'),
});
