// Loading the configuration (SPEC §2): the file named by --config or KVM2_CONFIG, YAML or JSON,
// else the embedded default; validated once into a deeply frozen Kvm2Config. Every message
// names its path, prefixed `kvm2.`, e.g. `kvm2.hosts[1].uri: …`.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';
import type { z } from 'zod';
import { parseLibvirtUri, type LibvirtTarget } from '../../libvirt/transport/uri.js';
import { Kvm2Error } from '../../errors/error.js';
import { EMBEDDED_DEFAULT, configSchema, type Kvm2Config } from './schema.js';
import { formatPath } from './config-path.js';
import { editDistance } from './edit-distance.js';
import { jsonSyntaxProblem, syntaxIssue, yamlSyntaxProblem } from './syntax-errors.js';
import { aliasProblem } from './yaml-aliases.js';

export class ConfigError extends Kvm2Error {
  declare readonly code: 'ERR_CONFIG';
  override name = 'ConfigError';

  constructor(
    /** One line per problem, each starting with its `kvm2.` path. */
    readonly issues: readonly string[],
    /** The file the configuration came from; undefined for the embedded default or an object. */
    readonly file?: string,
  ) {
    const where = file === undefined ? 'invalid configuration' : `invalid configuration in ${file}`;
    super(
      'ERR_CONFIG',
      issues.length === 1 ? `${where}: ${issues[0]}` : `${where}:\n  ${issues.join('\n  ')}`,
    );
  }
}

interface DefLike {
  readonly type: string;
  readonly in?: z.ZodType;
  readonly innerType?: z.ZodType;
  readonly shape?: Readonly<Record<string, z.ZodType>>;
  readonly element?: z.ZodType;
  readonly valueType?: z.ZodType;
}

/** The keys the schema accepts at `segments`, to suggest one for a misspelt key. */
function keysAt(schema: z.ZodType, segments: readonly PropertyKey[]): string[] {
  let current: z.ZodType | undefined = schema;
  let i = 0;
  while (current !== undefined) {
    const def = current._zod.def as unknown as DefLike;
    if (def.type === 'pipe') current = def.in;
    else if (def.type === 'default' || def.type === 'prefault' || def.type === 'optional') {
      current = def.innerType;
    } else if (def.type === 'object' && def.shape !== undefined) {
      if (i === segments.length) return Object.keys(def.shape);
      current = def.shape[String(segments[i++])];
    } else if (def.type === 'array') [current, i] = [def.element, i + 1];
    else if (def.type === 'record') [current, i] = [def.valueType, i + 1];
    else return [];
  }
  return [];
}

function suggestion(key: string, known: readonly string[]): string {
  const typed = key.toLowerCase();
  const near = known.find((k) => {
    const candidate = k.toLowerCase();
    return (
      editDistance(candidate, typed) <= 2 || (typed.length >= 3 && candidate.startsWith(typed))
    );
  });
  return near === undefined ? '' : ` (did you mean '${near}'?)`;
}

function issueLines(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      const known = keysAt(configSchema, issue.path);
      return issue.keys.map((key) => {
        const hint = key.includes(':') ? " (a space missing after ':'?)" : suggestion(key, known);
        return `${formatPath([...issue.path, key])}: unknown key${hint}`;
      });
    }
    let message =
      issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    // YAML reads 12345, true or 1e10 as a number or a boolean: say how to keep it a string.
    if (
      issue.code === 'invalid_type' &&
      issue.expected === 'string' &&
      /received (number|boolean)$/.test(message)
    ) {
      message += ' (quote it in YAML)';
    }
    return [`${formatPath(issue.path)}: ${message}`];
  });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Validates a configuration object (already parsed from YAML or JSON). */
export function parseConfig(input: unknown, file?: string): Kvm2Config {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    const got =
      input === null || input === undefined
        ? 'nothing'
        : Array.isArray(input)
          ? 'a list'
          : typeof input;
    throw new ConfigError([`kvm2: expected a mapping at the top level, got ${got}`], file);
  }
  const proto = protoKeyPaths(input, []);
  if (proto.length > 0) {
    throw new ConfigError(
      proto.map((at) => `${formatPath(at)}: '__proto__' cannot be a key`),
      file,
    );
  }
  const result = configSchema.safeParse(input, {
    error: (issue) =>
      issue.code === 'invalid_type' && issue.input === undefined ? 'required' : undefined,
  });
  if (!result.success) throw new ConfigError(issueLines(result.error.issues), file);
  return deepFreeze(result.data);
}

/**
 * Where `value` has an own key `__proto__` (JSON.parse and the YAML parser make one): the schema
 * would drop it without a word, as copying it into a new object sets a prototype instead.
 */
function protoKeyPaths(
  value: unknown,
  at: readonly PropertyKey[],
  seen = new Set<object>(), // a YAML alias can make the same object (or a cycle) appear again
): PropertyKey[][] {
  if (typeof value !== 'object' || value === null || seen.has(value)) return [];
  seen.add(value);
  if (Array.isArray(value)) {
    return value.flatMap((item, i) => protoKeyPaths(item, [...at, i], seen));
  }
  return Object.keys(value).flatMap((key) =>
    key === '__proto__'
      ? [[...at, key]]
      : protoKeyPaths((value as Record<string, unknown>)[key], [...at, key], seen),
  );
}

export type ConfigFormat = 'yaml' | 'json';

/** `.json` is JSON, `.yaml`/`.yml` YAML; otherwise a leading `{` means JSON. */
export function detectFormat(text: string, file?: string): ConfigFormat {
  const ext = file === undefined ? '' : path.extname(file).toLowerCase();
  if (ext === '.json') return 'json';
  if (ext === '.yaml' || ext === '.yml') return 'yaml';
  return text.trimStart().startsWith('{') ? 'json' : 'yaml';
}

/** Parses a configuration file's text. A key given twice is an error in either format. */
export function parseConfigText(
  text: string,
  options: { file?: string | undefined; format?: ConfigFormat | undefined } = {},
): Kvm2Config {
  const { file } = options;
  const format = options.format ?? detectFormat(text, file);
  // Neither parser's message is shown: both quote the text, which may hold a password.
  if (format === 'json') {
    try {
      JSON.parse(text);
    } catch {
      const problem = jsonSyntaxProblem(text) ?? { what: 'a syntax error' };
      throw new ConfigError([syntaxIssue('JSON', problem)], file);
    }
  }
  // JSON is YAML 1.2, and the YAML parser reports duplicate keys, which JSON.parse lets pass.
  const doc = YAML.parseDocument(text, { uniqueKeys: true, prettyErrors: true, merge: true });
  const first = doc.errors[0];
  if (first !== undefined) {
    const problem = yamlSyntaxProblem(first);
    throw new ConfigError([syntaxIssue(format === 'json' ? 'JSON' : 'YAML', problem)], file);
  }
  const aliases = aliasProblem(doc);
  if (aliases !== undefined) throw new ConfigError([aliases], file);
  // The bounds above are the ones that count; the package's own check stays off the path.
  return parseConfig(doc.toJS({ maxAliasCount: -1 }), file);
}

export interface LoadConfigOptions {
  /** `--config`; wins over KVM2_CONFIG. */
  readonly file?: string | undefined;
  /** Defaults to process.env. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined;
}

/** The file to read, or undefined for the embedded default. */
export function resolveConfigPath(options: LoadConfigOptions = {}): string | undefined {
  const env = options.env ?? process.env;
  const file = options.file ?? env.KVM2_CONFIG;
  return file === undefined || file === '' ? undefined : path.resolve(file);
}

/** Reads and validates the configuration once, at start. Never dials. */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<Kvm2Config> {
  const file = resolveConfigPath(options);
  if (file === undefined) return parseConfig(EMBEDDED_DEFAULT);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(
      [`kvm2: cannot read the configuration file (${e.code ?? e.message})`],
      file,
    );
  }
  return parseConfigText(text, { file });
}

/** Each configured host's libvirt target, for HostTable. */
export function hostTargets(config: Kvm2Config): [string, LibvirtTarget][] {
  return config.hosts.map((h) => [h.name, parseLibvirtUri(h.uri)]);
}
