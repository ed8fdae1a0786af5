// kvm2 board: syntax and help; actions/board.ts runs it.
import { defineCommand } from '../options/command.js';

export const boardCommand = defineCommand({
  name: 'board',
  usage: 'board',
  summary: 'serve the Bull Board dashboard on board.listen until SIGTERM',
  description: [
    'Prints the dashboard URL. User-data and network-config are redacted; credentials and',
    'read-only mode come from the board section of the configuration.',
  ],
  load: () => import('../actions/board.js'),
});
