// Command-line parsing on node:util parseArgs. parseArgs runs non-strict with tokens, and the
// checks are ours, so every mistake names the option as typed (`--grace`, `-x`) and exits 2
// with the command's usage. Values are read through ParsedArgs, whose accessors name the
// option in every error too.
import { parseArgs } from 'node:util';
import { parseInstanceId } from '../../src/provider/core/ids.js';
import { UsageError } from '../terminal/errors.js';
import { editDistance } from '../../src/provider/config/edit-distance.js';

export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** Repeatable: every value is kept, in order. */
  readonly multiple?: boolean;
  /** The value's placeholder in help: FILE, N, ID. */
  readonly value?: string;
  readonly description: string;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

export interface PositionalSpec {
  readonly name: string;
  readonly description: string;
}

/** What parsing needs to know of a command. */
export interface CommandSyntax {
  /** `create`, `config check`. */
  readonly name: string;
  /** The usage line after `kvm2 `'s name, e.g. `delete ID [--wait] [--json]`. */
  readonly usage: string;
  readonly options: OptionSpecs;
  /** Required positional arguments, in order (none take optional ones). */
  readonly positionals?: readonly PositionalSpec[];
}

/** Options every command takes. */
export const COMMON_OPTIONS: OptionSpecs = Object.freeze({
  config: {
    type: 'string',
    value: 'FILE',
    description: 'configuration file (default: $KVM2_CONFIG, else the embedded default)',
  },
  help: { type: 'boolean', short: 'h', description: 'show this help' },
});

export const JSON_OPTION: OptionSpecs = Object.freeze({
  json: { type: 'boolean', description: 'print JSON for scripts' },
});

type Value = string | boolean | (string | boolean)[] | undefined;

export type Parsed = { readonly help: true } | { readonly help: false; readonly args: ParsedArgs };

function usage(command: CommandSyntax, message: string): UsageError {
  return new UsageError(message, command.name, `kvm2 ${command.usage}`);
}

function flagName(name: string): string {
  return `--${name}`;
}

/** The closest known word (option or command), for "did you mean". */
export function nearest(typed: string, known: readonly string[]): string | undefined {
  const bare = typed.replace(/^-+/, '');
  if (bare === '') return undefined;
  return known.find((k) => k.startsWith(bare) || bare.startsWith(k) || editDistance(k, bare) <= 2);
}

/**
 * Parses a command's arguments (after its name). `--help` anywhere wins over every other
 * mistake: someone asking for help gets it.
 */
export function parseCommandArgs(command: CommandSyntax, argv: readonly string[]): Parsed {
  const specs = command.options;
  const { values, positionals, tokens } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      Object.entries(specs).map(([name, spec]) => [
        name,
        {
          type: spec.type,
          ...(spec.short === undefined ? {} : { short: spec.short }),
          ...(spec.multiple === true ? { multiple: true } : {}),
        },
      ]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  if (tokens.some((t) => t.kind === 'option' && t.name === 'help' && specs['help'] !== undefined)) {
    return { help: true };
  }
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const spec = Object.hasOwn(specs, token.name) ? specs[token.name] : undefined;
    if (spec === undefined) {
      const near = nearest(token.rawName, Object.keys(specs));
      const hint = near === undefined ? '' : ` (did you mean ${flagName(near)}?)`;
      throw usage(command, `unknown option '${token.rawName}' for 'kvm2 ${command.name}'${hint}`);
    }
    const shown = flagName(token.name);
    if (spec.type === 'boolean' && token.value !== undefined) {
      throw usage(command, `option ${shown} takes no value`);
    }
    if (spec.type === 'string') {
      const placeholder = spec.value ?? 'VALUE';
      if (token.value === undefined) {
        throw usage(command, `option ${shown} needs a value (${shown} ${placeholder})`);
      }
      // parseArgs takes the next word as the value even when it looks like an option.
      if (token.inlineValue !== true && /^-./.test(token.value)) {
        throw usage(
          command,
          `option ${shown} needs a value, got the option '${token.value}' (write ${shown}=${token.value} if that is the value)`,
        );
      }
    }
    if (spec.multiple !== true && seen.has(token.name)) {
      throw usage(command, `option ${shown} is given more than once`);
    }
    seen.add(token.name);
  }
  const wanted = command.positionals ?? [];
  const missing = wanted[positionals.length];
  if (missing !== undefined) throw usage(command, `missing argument ${missing.name}`);
  const extra = positionals[wanted.length];
  if (extra !== undefined) throw usage(command, `unexpected argument '${extra}'`);
  return {
    help: false,
    args: new ParsedArgs(command, values, positionals),
  };
}

/** Typed access to parsed values; every error names the option. */
export class ParsedArgs {
  constructor(
    private readonly command: CommandSyntax,
    private readonly values: Readonly<Record<string, Value>>,
    readonly positionals: readonly string[],
  ) {}

  /** A usage error for this command (status 2, with its usage line). */
  usageError(message: string): UsageError {
    return usage(this.command, message);
  }

  string(name: string): string | undefined {
    const value = this.values[name];
    return typeof value === 'string' ? value : undefined;
  }

  /** A string option the command cannot do without. */
  required(name: string): string {
    const value = this.string(name);
    if (value === undefined) throw this.usageError(`missing required option ${flagName(name)}`);
    return value;
  }

  flag(name: string): boolean {
    return this.values[name] === true;
  }

  /**
   * A repeatable option's values; commas also separate values (`--host a,b`). A value that
   * names nothing (`--hosts ""`, `--hosts ,`) is a mistake: read as no option at all, it would
   * widen the command to every host.
   */
  list(name: string): string[] {
    const value = this.values[name];
    const raw = Array.isArray(value) ? value : value === undefined ? [] : [value];
    return raw
      .filter((v): v is string => typeof v === 'string')
      .flatMap((v) => {
        const items = v
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item !== '');
        if (items.length === 0) {
          throw this.usageError(`option ${flagName(name)} needs at least one value, got '${v}'`);
        }
        return items;
      });
  }

  /** A whole number of at least 1. */
  positiveInt(name: string): number | undefined {
    const text = this.string(name);
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
      throw this.usageError(
        `option ${flagName(name)} must be a whole number of at least 1, got '${text}'`,
      );
    }
    return Number(text);
  }

  /** An instance id `<host>/<name>`, checked before anything is dialed. */
  instanceId(value: string, what: string): string {
    try {
      parseInstanceId(value);
    } catch (err) {
      throw this.usageError(`${what}: ${(err as Error).message}`);
    }
    return value;
  }
}
