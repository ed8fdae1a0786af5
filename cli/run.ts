// The CLI's dispatch: `kvm2 <command> [options]`, where a command may be two words
// (`config check`). Returns the exit status; never throws.
import { nearest, parseCommandArgs } from './options/args.js';
import type { Command } from './options/command.js';
import { COMMANDS } from './commands/index.js';
import { EXIT, UsageError, reportError } from './terminal/errors.js';
import { commandHelp, groupHelp, topLevelHelp } from './options/help.js';
import type { CliIo } from './terminal/io.js';

const HELP_FLAGS = new Set(['-h', '--help']);

type Resolved =
  | { readonly kind: 'command'; readonly command: Command; readonly rest: readonly string[] }
  | { readonly kind: 'group'; readonly group: string; readonly commands: readonly Command[] };

function resolve(argv: readonly string[]): Resolved {
  const [first = '', second] = argv;
  const single = COMMANDS.find((c) => c.name === first);
  if (single !== undefined) return { kind: 'command', command: single, rest: argv.slice(1) };
  const grouped = COMMANDS.filter((c) => c.name.startsWith(`${first} `));
  if (grouped.length > 0) {
    const sub = grouped.find((c) => c.name === `${first} ${second ?? ''}`);
    if (sub !== undefined) return { kind: 'command', command: sub, rest: argv.slice(2) };
    if (second !== undefined && !HELP_FLAGS.has(second)) {
      const names = grouped.map((c) => c.name.slice(first.length + 1));
      throw new UsageError(
        `unknown subcommand '${second}' for 'kvm2 ${first}' (subcommands: ${names.join(', ')})`,
        first,
        `kvm2 ${first} <subcommand> [options]`,
      );
    }
    return { kind: 'group', group: first, commands: grouped };
  }
  const words = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0] ?? ''))];
  if (first.startsWith('-')) {
    throw new UsageError(`unknown option '${first}': options come after the command`);
  }
  const near = nearest(first, words);
  throw new UsageError(
    `unknown command '${first}'${near === undefined ? '' : ` (did you mean '${near}'?)`}`,
    undefined,
    'kvm2 <command> [options]',
  );
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const [first, second] = argv;
    if (first === undefined) {
      io.err(...topLevelHelp(COMMANDS));
      return EXIT.usage;
    }
    if (HELP_FLAGS.has(first) || first === 'help') {
      // `kvm2 help create` is `kvm2 create --help`.
      if (first === 'help' && second !== undefined)
        return await runCli([...argv.slice(1), '--help'], io);
      io.out(...topLevelHelp(COMMANDS));
      return EXIT.ok;
    }
    const resolved = resolve(argv);
    if (resolved.kind === 'group') {
      // `kvm2 config --help` asked for it; a bare `kvm2 config` is a usage mistake.
      if (argv[1] === undefined) {
        io.err(...groupHelp(resolved.group, resolved.commands));
        return EXIT.usage;
      }
      io.out(...groupHelp(resolved.group, resolved.commands));
      return EXIT.ok;
    }
    const parsed = parseCommandArgs(resolved.command, resolved.rest);
    if (parsed.help) {
      io.out(...commandHelp(resolved.command));
      return EXIT.ok;
    }
    return await resolved.command.run(parsed.args, io);
  } catch (err) {
    return reportError(err, io);
  }
}
