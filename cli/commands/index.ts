// Every kvm2 command, in the order the top-level help lists them.
import type { Command } from '../options/command.js';
import { boardCommand } from './board.js';
import { checkCommand } from './check.js';
import { configCheckCommand } from './config-check.js';
import { createCommand } from './create.js';
import { deleteCommand } from './delete.js';
import { eventsCommand } from './events.js';
import { gcCommand } from './gc.js';
import { getCommand } from './get.js';
import { listCommand } from './list.js';
import { resultsCommand } from './results.js';
import { workerCommand } from './worker.js';

export const COMMANDS: readonly Command[] = Object.freeze([
  workerCommand,
  boardCommand,
  createCommand,
  deleteCommand,
  gcCommand,
  getCommand,
  listCommand,
  checkCommand,
  resultsCommand,
  eventsCommand,
  configCheckCommand,
]);
