// kvm2 get: syntax and help; actions/get.ts runs it.
import { defineCommand } from '../options/command.js';

export const getCommand = defineCommand({
  name: 'get',
  usage: 'get ID [--json]',
  summary: 'show an instance: state, address, uid, tag, image',
  description: [
    'Reads the host directly (no worker needed). Exit status 1 when there is no such instance.',
  ],
  positionals: [{ name: 'ID', description: 'the instance id, <host>/<name>' }],
  json: true,
  load: () => import('../actions/get.js'),
});
