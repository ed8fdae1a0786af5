// The configuration and logger every command starts from. The configuration is read once,
// from --config, else KVM2_CONFIG, else the embedded default (SPEC §2).
import pino, { type Logger } from 'pino';
import { loadConfig } from '../../src/provider/config/load.js';
import type { Kvm2Config } from '../../src/provider/config/schema.js';
import { createLogger } from '../../workers/logger.js';
import type { ParsedArgs } from './args.js';
import { CliError } from '../terminal/errors.js';
import type { CliIo } from '../terminal/io.js';

export function loadCliConfig(args: ParsedArgs, io: CliIo): Promise<Kvm2Config> {
  return loadConfig({ file: args.string('config'), env: io.env });
}

/**
 * The logger for one-shot commands: warnings and worse (LOG_LEVEL overrides), as JSON lines on
 * standard error, so they never mix with the output a script reads.
 */
export function cliLogger(io: CliIo): Logger {
  return createLogger({
    name: 'kvm2',
    level: io.env['LOG_LEVEL'] ?? 'warn',
    destination: pino.destination({ dest: 2, sync: true }),
  });
}

/** The host, checked against the configuration: a job for an unknown host would wait forever. */
export function configuredHost(config: Kvm2Config, host: string, what: string): string {
  if (config.hosts.some((h) => h.name === host)) return host;
  const known = config.hosts.map((h) => h.name).join(', ');
  throw new CliError(`${what}: host '${host}' is not in the configuration (hosts: ${known})`);
}
