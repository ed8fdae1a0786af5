// kvm2 worker: syntax and help; actions/worker.ts runs it.
import { defineCommand } from '../options/command.js';

export const workerCommand = defineCommand({
  name: 'worker',
  usage: 'worker [--hosts a,b]',
  summary: 'run the job workers for the configured hosts until SIGTERM',
  description: [
    'Serves the host.<name> queues of every configured host (or those named), gc and health.',
    'Logs JSON lines to standard output (LOG_LEVEL, default info). SIGTERM or SIGINT stops',
    'taking jobs and lets active ones finish; a second signal forces.',
  ],
  options: {
    hosts: {
      type: 'string',
      value: 'a,b',
      multiple: true,
      description: 'only these hosts (comma-separated, or repeated)',
    },
  },
  load: () => import('../actions/worker.js'),
});
