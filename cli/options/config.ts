// The configuration and logger every command starts from. The configuration is read once,
// from --config, else KVM2_CONFIG, else the embedded default (SPEC §2).
import pino, { type Logger } from 'pino';
import { loadConfig } from '../../src/provider/config/load.js';
import type { Kvm2Config } from '../../src/provider/config/schema.js';
import { createLogger } from '../../workers/logger.js';
import type { ParsedArgs } from './args.js';
import { CliError } from '../terminal/errors.js';
import type { CliIo } from '../terminal/io.js';

/**
 * The file --config names. An empty value (`--config=`, `--config "$UNSET"`) is a mistake:
 * loadConfig would read it as no --config at all and fall back to KVM2_CONFIG or the default.
 */
export function configFile(args: ParsedArgs): string | undefined {
  const file = args.string('config');
  if (file === '') throw args.usageError('option --config needs a file name, got an empty value');
  return file;
}

export function loadCliConfig(args: ParsedArgs, io: CliIo): Promise<Kvm2Config> {
  return loadConfig({ file: configFile(args), env: io.env });
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
