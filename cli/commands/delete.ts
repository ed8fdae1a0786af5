// kvm2 delete: syntax and help; actions/delete.ts runs it.
import { defineCommand } from '../options/command.js';

export const deleteCommand = defineCommand({
  name: 'delete',
  usage: 'delete ID [--wait] [--json]',
  summary: 'enqueue a delete job for an instance',
  description: [
    'Prints the job id (--json: {jobId, id, generation}). A delete of an instance that is',
    'already gone succeeds. With --wait, waits for the final result and exits 0 only when it',
    'succeeded; with --wait --json, prints only the final result entry.',
  ],
  positionals: [{ name: 'ID', description: 'the instance id, <host>/<name>' }],
  json: true,
  options: {
    wait: { type: 'boolean', description: 'wait for the final result and exit 0 only on success' },
  },
  load: () => import('../actions/delete.js'),
});
