// Symbol table over the parsed .x files: resolves constant names to numbers, follows typedefs
// down to a small set of wire shapes (ResolvedType), and names things the TypeScript way.
import type { Declaration, Definition, Value, XdrFile } from './ast.js';

/**
 * Constants the .x files take from libvirt's C headers (rpcgen passes them through to C).
 * Values: include/libvirt/libvirt-host.h (VIR_UUID_BUFLEN, VIR_SECURITY_*_BUFLEN) and
 * include/libvirt/libvirt-common.h.in (virTypedParameterType).
 */
export const C_HEADER_CONSTANTS: ReadonlyMap<string, number> = new Map([
  ['VIR_UUID_BUFLEN', 16],
  ['VIR_SECURITY_MODEL_BUFLEN', 256 + 1],
  ['VIR_SECURITY_LABEL_BUFLEN', 4096 + 1],
  ['VIR_SECURITY_DOI_BUFLEN', 256 + 1],
  ['VIR_TYPED_PARAM_INT', 1],
  ['VIR_TYPED_PARAM_UINT', 2],
  ['VIR_TYPED_PARAM_LLONG', 3],
  ['VIR_TYPED_PARAM_ULLONG', 4],
  ['VIR_TYPED_PARAM_DOUBLE', 5],
  ['VIR_TYPED_PARAM_BOOLEAN', 6],
  ['VIR_TYPED_PARAM_STRING', 7],
  // XDR's own boolean literals (RFC 4506 §4.4).
  ['TRUE', 1],
  ['FALSE', 0],
]);

/** The wire shapes everything resolves to. char/short are words (RFC 4506 §4.1 via rpcgen). */
export type ResolvedType =
  | { readonly k: 'int' | 'uint' | 'hyper' | 'uhyper' | 'bool' | 'float' | 'double' }
  | { readonly k: 'string'; readonly max: number }
  | { readonly k: 'opaque'; readonly max: number }
  | { readonly k: 'fixedOpaque'; readonly length: number }
  | { readonly k: 'enum'; readonly name: string }
  | { readonly k: 'struct'; readonly name: string }
  | { readonly k: 'union'; readonly name: string }
  | { readonly k: 'optional'; readonly of: ResolvedType }
  | { readonly k: 'varArray'; readonly of: ResolvedType; readonly max: number }
  | { readonly k: 'fixedArray'; readonly of: ResolvedType; readonly length: number };

type TypeDefinition = Exclude<Definition, { kind: 'const' }>;

export interface ConstantInfo {
  readonly name: string;
  readonly value: number;
  /** The literal as written, so 0x20008086 stays hex in the output. */
  readonly text: string;
}

export const UNBOUNDED = 0xffffffff;

const ACRONYMS = new Set(
  'XML UUID URI ID CPU OS IP MAC API NUMA IO PCI SCSI USB JSON TPM NVRAM'.split(' '),
);

/** Names a stripped type may not take, as they would shadow a global (`remote_error`). */
const GLOBAL_NAMES = new Set([
  ...'Error Object Function Array String Number Boolean Symbol Map Set Promise'.split(' '),
  ...'Date RegExp Buffer Record Partial Event'.split(' '),
]);

function pascalWords(words: readonly string[]): string {
  return words
    .filter((w) => w.length > 0)
    .map((w) => {
      const upper = w.toUpperCase();
      if (ACRONYMS.has(upper)) return upper;
      return w.charAt(0).toUpperCase() + w.slice(1);
    })
    .join('');
}

/** `REMOTE_PROC_DOMAIN_DEFINE_XML_FLAGS` → `DomainDefineXMLFlags`. */
export function procedureName(enumMember: string, prefix = 'REMOTE_PROC_'): string {
  if (!enumMember.startsWith(prefix))
    throw new Error(`${enumMember} does not start with ${prefix}`);
  return pascalWords(enumMember.slice(prefix.length).toLowerCase().split('_'));
}

/** `remote_nonnull_domain` → `NonnullDomain`, `virNetMessageType` → `MessageType`. */
export function typeName(xdrName: string): string {
  let stripped = xdrName;
  let prefix = '';
  if (xdrName.startsWith('remote_')) {
    stripped = xdrName.slice('remote_'.length);
    prefix = 'Remote';
  } else if (xdrName.startsWith('virNet')) {
    stripped = xdrName.slice('virNet'.length);
    prefix = 'VirNet';
  }
  const name = pascalWords(stripped.split('_'));
  return GLOBAL_NAMES.has(name) ? prefix + name : name;
}

/** `hv_ver` → `hvVer`; already-camel names (`nrVirtCpu`, `usageID`) are kept. */
export function fieldName(xdrName: string): string {
  const words = xdrName.split('_').filter((w) => w.length > 0);
  const [first = '', ...rest] = words;
  return (
    first.charAt(0).toLowerCase() +
    first.slice(1) +
    rest.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('')
  );
}

export class ProtocolModel {
  private readonly types = new Map<string, TypeDefinition>();
  private readonly constants = new Map<string, Extract<Definition, { kind: 'const' }>>();
  private readonly enumMembers = new Map<string, Value>();
  /** Constants (from the .x files) that sizes of resolved types referred to. */
  readonly usedConstants = new Set<string>();

  constructor(files: readonly XdrFile[]) {
    for (const f of files) {
      for (const def of f.definitions) {
        if (def.kind === 'const') {
          this.claim(def.name, f.file);
          this.constants.set(def.name, def);
        } else {
          this.claim(def.name, f.file);
          this.types.set(def.name, def);
          if (def.kind === 'enum') {
            for (const m of def.members) {
              this.claim(m.name, f.file);
              this.enumMembers.set(m.name, m.value);
            }
          }
        }
      }
    }
  }

  private readonly owners = new Map<string, string>();

  private claim(name: string, file: string): void {
    const prev = this.owners.get(name);
    if (prev !== undefined) throw new Error(`${name} is defined twice (${prev} and ${file})`);
    this.owners.set(name, file);
  }

  type(name: string): TypeDefinition {
    const def = this.types.get(name);
    if (def === undefined) throw new Error(`unknown type '${name}'`);
    return def;
  }

  hasType(name: string): boolean {
    return this.types.has(name);
  }

  enumDef(name: string): Extract<Definition, { kind: 'enum' }> {
    const def = this.type(name);
    if (def.kind !== 'enum') throw new Error(`'${name}' is a ${def.kind}, not an enum`);
    return def;
  }

  constant(name: string): ConstantInfo {
    const def = this.constants.get(name);
    if (def === undefined) throw new Error(`unknown constant '${name}'`);
    return {
      name,
      value: this.value(def.value),
      text: def.value.kind === 'literal' ? def.value.text : String(this.value(def.value)),
    };
  }

  /** Resolves a literal or a name (a .x constant, an enum member, or a C header constant). */
  value(v: Value, seen: ReadonlySet<string> = new Set()): number {
    if (v.kind === 'literal') return v.value;
    if (seen.has(v.name)) throw new Error(`constant '${v.name}' is defined in terms of itself`);
    const next = new Set(seen).add(v.name);
    const c = this.constants.get(v.name);
    if (c !== undefined) return this.value(c.value, next);
    const m = this.enumMembers.get(v.name);
    if (m !== undefined) return this.value(m, next);
    const ext = C_HEADER_CONSTANTS.get(v.name);
    if (ext !== undefined) return ext;
    throw new Error(
      `unknown constant '${v.name}' (add it to C_HEADER_CONSTANTS if it comes from a C header)`,
    );
  }

  /** A size: as value(), and the .x constant it named is recorded for the output. */
  private size(v: Value, what: string): number {
    if (v.kind === 'name' && this.constants.has(v.name)) this.usedConstants.add(v.name);
    const n = this.value(v);
    if (!Number.isInteger(n) || n < 0 || n > UNBOUNDED) throw new Error(`${what}: bad size ${n}`);
    return n;
  }

  /** Follows typedefs; the result is what goes on the wire for this declaration. */
  resolve(decl: Declaration, context: string, depth = 0): ResolvedType {
    if (depth > 32) throw new Error(`${context}: typedef cycle`);
    const where = `${context}.${decl.name}`;
    const shape = decl.shape;
    if (decl.type.kind === 'string' || decl.type.kind === 'opaque') {
      const k = decl.type.kind;
      if (shape.kind === 'varArray') {
        const max = shape.max === undefined ? UNBOUNDED : this.size(shape.max, where);
        return { k, max };
      }
      if (shape.kind === 'fixedArray' && k === 'opaque') {
        return { k: 'fixedOpaque', length: this.size(shape.length, where) };
      }
      throw new Error(`${where}: ${k} needs a length`);
    }

    let base: ResolvedType;
    if (decl.type.kind === 'primitive') {
      switch (decl.type.name) {
        case 'int':
        case 'char':
        case 'short':
          base = { k: 'int' };
          break;
        case 'unsigned int':
        case 'unsigned char':
        case 'unsigned short':
          base = { k: 'uint' };
          break;
        case 'hyper':
          base = { k: 'hyper' };
          break;
        case 'unsigned hyper':
          base = { k: 'uhyper' };
          break;
        case 'bool':
        case 'float':
        case 'double':
          base = { k: decl.type.name };
          break;
      }
    } else {
      const def = this.types.get(decl.type.name);
      if (def === undefined) throw new Error(`${where}: unknown type '${decl.type.name}'`);
      if (def.kind === 'typedef') base = this.resolve(def.decl, def.name, depth + 1);
      else base = { k: def.kind, name: def.name };
    }

    switch (shape.kind) {
      case 'scalar':
        return base;
      case 'optional':
        if (base.k === 'optional') throw new Error(`${where}: optional of an optional`);
        return { k: 'optional', of: base };
      case 'varArray':
        return {
          k: 'varArray',
          of: base,
          max: shape.max === undefined ? UNBOUNDED : this.size(shape.max, where),
        };
      case 'fixedArray':
        return { k: 'fixedArray', of: base, length: this.size(shape.length, where) };
    }
  }

  /** The fewest bytes one value can take, for XdrReader.count's allocation guard. */
  minSize(t: ResolvedType, seen: ReadonlySet<string> = new Set()): number {
    switch (t.k) {
      case 'hyper':
      case 'uhyper':
      case 'double':
        return 8;
      case 'fixedOpaque':
        return t.length + ((4 - (t.length & 3)) & 3);
      case 'fixedArray':
        return t.length * this.minSize(t.of, seen);
      case 'struct': {
        if (seen.has(t.name)) return 4;
        const def = this.type(t.name);
        if (def.kind !== 'struct') return 4;
        const next = new Set(seen).add(t.name);
        let sum = 0;
        for (const f of def.fields) sum += this.minSize(this.resolve(f, def.name), next);
        return sum;
      }
      case 'union': {
        if (seen.has(t.name)) return 4;
        const def = this.type(t.name);
        if (def.kind !== 'union') return 4;
        const next = new Set(seen).add(t.name);
        const arms = def.arms.map((a) => a.decl);
        if (def.defaultArm !== undefined) arms.push(def.defaultArm ?? undefined);
        let least = Infinity;
        for (const d of arms) {
          least = Math.min(
            least,
            d === undefined ? 0 : this.minSize(this.resolve(d, def.name), next),
          );
        }
        return 4 + (least === Infinity ? 0 : least);
      }
      default:
        return 4;
    }
  }
}
