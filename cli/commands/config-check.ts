// kvm2 config check: syntax and help; actions/config-check.ts runs it.
import { defineCommand } from '../options/command.js';

export const configCheckCommand = defineCommand({
  name: 'config check',
  usage: 'config check [--config FILE] [--json]',
  summary: 'validate the configuration and print a summary (dials nothing)',
  description: [
    'Exit status 1 with every problem, each naming its path (kvm2.hosts[0].uri: ...).',
    'Warnings (an unreadable SSH key or known_hosts file) go to standard error.',
  ],
  json: true,
  load: () => import('../actions/config-check.js'),
});
