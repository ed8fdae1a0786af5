// `npm start`: a worker and the board in one process, on the configuration from KVM2_CONFIG or
// the embedded default (the local libvirtd as host `local`, Redis on 127.0.0.1:6379). For a
// laptop or a single host; a fleet runs `kvm2 worker` and `kvm2 board` as separate services
// (docker-compose.yml, docs/operations.md).
import { loadConfig } from '../src/provider/config/load.js';
import { configWarnings } from '../src/provider/config/warnings.js';
import { startBoard } from '../board/server.js';
import { createLogger } from '../workers/logger.js';
import { runWorker } from '../workers/process.js';

const logger = createLogger({ name: 'kvm2' });
let board: Awaited<ReturnType<typeof startBoard>> | undefined;
try {
  const config = await loadConfig({ env: process.env });
  for (const warning of configWarnings(config)) logger.warn(warning);
  board = await startBoard(config, { logger });
  logger.info({ url: board.url }, 'board listening');
  await runWorker(config, { logger });
} catch (err) {
  logger.fatal({ err: (err as Error).message }, 'kvm2 could not start');
  process.exitCode = 1;
} finally {
  // The board too when the worker could not start: a dashboard without a worker would keep
  // the process up, and its supervisor would never see the failure.
  await board?.close().catch(() => undefined);
  logger.flush();
}
// As cli/main.ts: what a library leaves alive (a timer) does not keep a finished run up.
setTimeout(() => process.exit(), 2_000).unref();
