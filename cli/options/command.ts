// What a CLI command is: its syntax (parsed by args.ts), its help, and what it runs. Every
// command takes --config and --help; those that print something a script reads take --json.
import {
  COMMON_OPTIONS,
  JSON_OPTION,
  type CommandSyntax,
  type OptionSpecs,
  type ParsedArgs,
} from './args.js';
import type { CliIo } from '../terminal/io.js';

export interface Command extends CommandSyntax {
  /** One line for the top-level command list. */
  readonly summary: string;
  /** Lines shown in the command's help under its usage. */
  readonly description: readonly string[];
  /** Resolves with the exit status; throws for failures (errors.ts prints them). */
  run(args: ParsedArgs, io: CliIo): Promise<number>;
}

/** A command's implementation, in a module of its own under actions/. */
export interface CommandAction {
  run(this: void, args: ParsedArgs, io: CliIo): Promise<number>;
}

export interface CommandDefinition extends Omit<Command, 'options' | 'description' | 'run'> {
  readonly options?: OptionSpecs;
  readonly description?: readonly string[];
  /** Whether the command takes --json. */
  readonly json?: boolean;
  /**
   * Imports the implementation. Only the command that runs loads its dependencies (BullMQ,
   * the libvirt client), so help and usage errors answer at once.
   */
  readonly load: () => Promise<CommandAction>;
}

export function defineCommand(definition: CommandDefinition): Command {
  const { json, options, description, load, ...rest } = definition;
  return Object.freeze({
    ...rest,
    description: description ?? [],
    run: async (args: ParsedArgs, io: CliIo) => (await load()).run(args, io),
    options: Object.freeze({
      ...options,
      ...(json === true ? JSON_OPTION : {}),
      ...COMMON_OPTIONS,
    }),
  });
}
