// The CLI's exit statuses and how a failure is told: one line `kvm2: <message>` on standard
// error, status 1; a usage mistake adds the usage line, status 2; a wait that ran out of time
// (ERR_WAIT_TIMEOUT, --timeout) is status 124. A stack trace only with KVM2_DEBUG=1. Messages
// come from kvm2's own errors, which never carry user-data.
import { Kvm2Error, type Kvm2ErrorOptions } from '../../src/errors/error.js';
import { isKinded } from '../../src/errors/kind.js';
import { oneLine } from './format.js';
import type { CliIo } from './io.js';

export const EXIT = Object.freeze({
  ok: 0,
  failure: 1,
  usage: 2,
  /** A wait that reached --timeout: 124, as timeout(1) reports a command it stopped. */
  timeout: 124,
  /** 128 + SIGINT, as a shell reports a command stopped with Ctrl-C. */
  interrupted: 130,
});

/** A mistake in the command line: unknown option, missing or malformed value. Status 2. */
export class UsageError extends Kvm2Error {
  declare readonly code: 'ERR_USAGE';
  override name = 'UsageError';

  constructor(
    message: string,
    /** `create`, `config check`; undefined for the top level. */
    readonly command?: string,
    /** The command's usage line, shown under the message. */
    readonly usage?: string,
  ) {
    super('ERR_USAGE', message);
  }
}

/** A failure the CLI itself found (an unreadable --user-data file, an unknown host). Status 1. */
export class CliError extends Kvm2Error {
  declare readonly code: 'ERR_CLI_INPUT';
  override name = 'CliError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_CLI_INPUT', message, options);
  }
}

/** Prints the failure and returns the exit status for it. */
export function reportError(err: unknown, io: CliIo): number {
  if (err instanceof UsageError) {
    const help = err.command === undefined ? 'kvm2 --help' : `kvm2 ${err.command} --help`;
    io.err(`kvm2: ${oneLine(err.message)}`);
    if (err.usage !== undefined) io.err(`usage: ${err.usage}`);
    io.err(`Run '${help}' for details.`);
    return EXIT.usage;
  }
  if (err instanceof InterruptedError) {
    io.err(`kvm2: ${oneLine(err.message)}`);
    return EXIT.interrupted;
  }
  if (isConfigError(err)) {
    // One line per problem, each naming its `kvm2.` path (docs/configuration.md).
    const where =
      err.file === undefined ? 'invalid configuration' : `invalid configuration in ${err.file}`;
    if (err.issues.length === 1) io.err(`kvm2: ${where}: ${oneLine(err.issues[0] ?? '')}`);
    else io.err(`kvm2: ${where}:`, ...err.issues.map((issue) => `  ${oneLine(issue)}`));
  } else {
    const message = err instanceof Error ? err.message : String(err);
    // The code names what failed below the command; the command's own refusals need none.
    const code = isKinded(err) && !(err instanceof CliError) ? ` (${err.code})` : '';
    io.err(`kvm2: ${oneLine(message)}${code}`);
  }
  if (io.env['KVM2_DEBUG'] === '1') io.err(...stackLines(err));
  return isKinded(err) && err.code === 'ERR_WAIT_TIMEOUT' ? EXIT.timeout : EXIT.failure;
}

/**
 * src/provider/config/load.ts's ConfigError, known by its code: importing the class would load
 * zod and YAML before every command, even for --help.
 */
function isConfigError(
  err: unknown,
): err is Error & { readonly issues: readonly string[]; readonly file?: string } {
  return (
    isKinded(err) &&
    err.code === 'ERR_CONFIG' &&
    Array.isArray((err as { issues?: unknown }).issues)
  );
}

/** The stack, then each cause's, for KVM2_DEBUG=1. */
function stackLines(err: unknown): string[] {
  const lines: string[] = [];
  let current: unknown = err;
  for (let depth = 0; current !== undefined && depth < 5; depth++) {
    const text =
      current instanceof Error ? (current.stack ?? current.message) : JSON.stringify(current);
    lines.push(depth === 0 ? text : `caused by: ${text}`);
    current = current instanceof Error ? current.cause : undefined;
  }
  return lines;
}

/** The user stopped a wait with Ctrl-C (or SIGTERM); the job itself carries on. Status 130. */
export class InterruptedError extends Kvm2Error {
  declare readonly code: 'ERR_INTERRUPTED';
  override name = 'InterruptedError';

  constructor(message: string) {
    super('ERR_INTERRUPTED', message);
  }
}
