// kvm2 board: the Bull Board dashboard (SPEC §8) on board.listen until SIGINT or SIGTERM.
import { startBoard } from '../../board/server.js';
import { configWarnings } from '../../src/provider/config/warnings.js';
import { createLogger } from '../../workers/logger.js';
import type { ParsedArgs } from '../options/args.js';
import { loadCliConfig } from '../options/config.js';
import { EXIT } from '../terminal/errors.js';
import type { CliIo } from '../terminal/io.js';
import { onStopSignal } from '../terminal/signals.js';

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const config = await loadCliConfig(args, io);
  const logger = createLogger({ name: 'kvm2-board' });
  // As config check prints them (docs/configuration.md): an unreadable key, a weak password.
  for (const warning of configWarnings(config)) logger.warn(warning);
  // Printed before the board logs anything: the log's writes are asynchronous, this one is not.
  const board = await startBoard(config, { logger, onListening: (url) => io.out(url) });
  let signals = 0;
  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const removeHandler = onStopSignal(() => {
    // The first signal closes the server (open requests get a short grace); a second one
    // does not wait for that.
    if (++signals > 1) process.exit(EXIT.interrupted);
    stop();
  });
  try {
    await stopped;
    await board.close();
  } finally {
    removeHandler();
  }
  logger.flush();
  return EXIT.ok;
}
