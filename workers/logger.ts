// pino JSON logs for the worker, the board and the CLI (SPEC §8). Secrets never reach a log:
// kvm2's own code never logs job data, and these redaction paths are the second line for any
// object that carries it anyway (a job, its data, a request, a config with credentials).
import pino, { type Logger } from 'pino';
import { REDACTED } from '../queues/registry.js';

const SECRET_KEYS = ['userData', 'networkConfig', 'password', 'authorization', 'privateKey'];

/** Where a secret may sit in a logged object: at the top, or up to three levels down. */
export const REDACT_PATHS: readonly string[] = SECRET_KEYS.flatMap((key) => [
  key,
  `*.${key}`,
  `*.*.${key}`,
  `*.*.*.${key}`,
]);

export interface LoggerOptions {
  readonly name: string;
  /** Defaults to LOG_LEVEL, else `info`. */
  readonly level?: string | undefined;
  /** Where lines go; standard output by default. */
  readonly destination?: pino.DestinationStream | undefined;
}

export function createLogger(options: LoggerOptions): Logger {
  const level = options.level ?? process.env['LOG_LEVEL'] ?? 'info';
  return pino(
    {
      name: options.name,
      level,
      redact: { paths: [...REDACT_PATHS], censor: REDACTED },
      base: { pid: process.pid },
    },
    options.destination ?? pino.destination({ sync: false }),
  );
}
