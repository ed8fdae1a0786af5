// kvm2 check: syntax and help; actions/check.ts runs it.
import { defineCommand } from '../options/command.js';

export const checkCommand = defineCommand({
  name: 'check',
  usage: 'check [--host H ...] [--json]',
  summary: 'probe hosts now: reachability, libvirt, pool, network (docs/health.md)',
  description: [
    'Every configured host, or those named, at once, each within health.timeout.',
    'Exit status 1 when any host is unhealthy; degraded (low pool space) is 0.',
  ],
  json: true,
  options: {
    host: {
      type: 'string',
      value: 'H',
      multiple: true,
      description: 'only this host (repeatable, or comma-separated)',
    },
  },
  load: () => import('../actions/check.js'),
});
