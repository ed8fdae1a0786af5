// kvm2 delete: syntax and help; actions/delete.ts runs it.
import { defineCommand } from '../options/command.js';
import { waitOptions } from './wait-options.js';

export const deleteCommand = defineCommand({
  name: 'delete',
  usage: 'delete ID [--wait [--timeout DURATION]] [--json]',
  summary: 'enqueue a delete job for an instance',
  description: [
    'Prints the job id (--json: {jobId, id, generation}). A delete of an instance that is',
    'already gone succeeds. With --wait, waits for the final result and exits 0 only when it',
    'succeeded; with --wait --json, prints only the final result entry. --timeout DURATION',
    '(30s, 10m, 2h, 1d) gives up waiting, status 124; the job carries on.',
  ],
  positionals: [{ name: 'ID', description: 'the instance id, <host>/<name>' }],
  json: true,
  options: waitOptions,
  load: () => import('../actions/delete.js'),
});
