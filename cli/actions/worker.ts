// kvm2 worker: the per-host worker pools (SPEC §8) until SIGTERM or SIGINT. runWorker installs
// its own signal handlers (graceful first, forceful on the second signal) and resolves once
// everything has shut down.
import { configWarnings } from '../../src/provider/config/warnings.js';
import { createLogger } from '../../workers/logger.js';
import { runWorker } from '../../workers/process.js';
import type { ParsedArgs } from '../options/args.js';
import { configuredHost, loadCliConfig } from '../options/config.js';
import { EXIT } from '../terminal/errors.js';
import type { CliIo } from '../terminal/io.js';

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
  const hosts = args.list('hosts');
  const config = await loadCliConfig(args, io);
  for (const host of hosts) configuredHost(config, host, '--hosts');
  const logger = createLogger({ name: 'kvm2-worker' });
  // As config check prints them (docs/configuration.md): an unreadable key, a weak password.
  for (const warning of configWarnings(config)) logger.warn(warning);
  await runWorker(config, { hosts: hosts.length === 0 ? undefined : hosts, logger });
  return EXIT.ok;
}
