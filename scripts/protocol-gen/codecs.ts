// Emits the TypeScript for one struct, union or enum: its type, then straight-line encode and
// decode functions calling XdrWriter/XdrReader directly, with every limit inlined as a literal.
// Nothing here runs per call except the emitted code itself: no schema is consulted at run time.
import type { Declaration, Definition, Value } from './parser.js';
import { fieldName, typeName, type ProtocolModel, type ResolvedType } from './model.js';

const RESERVED = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends ' +
    'false finally for function if import in instanceof new null return super switch this throw ' +
    'true try typeof var void while with yield let static implements interface package private ' +
    'protected public await arguments eval undefined'
  ).split(' '),
);

/** Local names the emitted functions use for themselves. */
const CODEC_LOCALS = new Set(['r', 'w', 'v']);

function localName(field: string): string {
  return RESERVED.has(field) || CODEC_LOCALS.has(field) || /^(i|n|item|present)\d*$/.test(field)
    ? `${field}_`
    : field;
}

/** The declaration as the .x file spells it, shown next to each field as its wire layout. */
export function declText(d: Declaration): string {
  const t = d.type;
  const type = t.kind === 'primitive' ? t.name : t.kind === 'ref' ? t.name : t.kind; // string / opaque
  const sizeText = (v: Value): string => (v.kind === 'literal' ? v.text : v.name);
  switch (d.shape.kind) {
    case 'scalar':
      return `${type} ${d.name}`;
    case 'optional':
      return `${type} *${d.name}`;
    case 'varArray':
      return `${type} ${d.name}<${d.shape.max === undefined ? '' : sizeText(d.shape.max)}>`;
    case 'fixedArray':
      return `${type} ${d.name}[${sizeText(d.shape.length)}]`;
  }
}

interface UnionArmPlan {
  /** The TS type of the discriminant in this arm: `1`, `2 | 3`, `true`, or `number`. */
  readonly discType: string;
  /** The literal when the arm has exactly one case. */
  readonly single: string | undefined;
  /** `case` labels; empty for the default arm. */
  readonly labels: readonly string[];
  readonly comment: string;
  readonly key: string | undefined;
  readonly type: ResolvedType | undefined;
}

export class CodecEmitter {
  constructor(private readonly model: ProtocolModel) {}

  tsType(t: ResolvedType): string {
    switch (t.k) {
      case 'int':
      case 'uint':
      case 'float':
      case 'double':
      case 'enum':
        return 'number';
      case 'hyper':
      case 'uhyper':
        return 'bigint';
      case 'bool':
        return 'boolean';
      case 'string':
        return 'string';
      case 'opaque':
      case 'fixedOpaque':
        return 'Buffer';
      case 'struct':
      case 'union':
        return typeName(t.name);
      case 'optional':
        return `${this.tsType(t.of)} | null`;
      case 'varArray':
      case 'fixedArray': {
        const inner = this.tsType(t.of);
        return /[ |]/.test(inner) ? `(${inner})[]` : `${inner}[]`;
      }
    }
  }

  /** True when the value decodes as one expression (no loop needed). */
  private isExpr(t: ResolvedType): boolean {
    if (t.k === 'varArray' || t.k === 'fixedArray') return false;
    if (t.k === 'optional') return this.isExpr(t.of);
    return true;
  }

  private decodeExpr(t: ResolvedType): string {
    switch (t.k) {
      case 'int':
      case 'enum':
        return 'r.int()';
      case 'uint':
        return 'r.uint()';
      case 'hyper':
        return 'r.hyper()';
      case 'uhyper':
        return 'r.uhyper()';
      case 'bool':
        return 'r.bool()';
      case 'float':
        return 'r.float()';
      case 'double':
        return 'r.double()';
      case 'string':
        return `r.string(${t.max})`;
      case 'opaque':
        return `r.opaque(${t.max})`;
      case 'fixedOpaque':
        return `r.fixedOpaque(${t.length})`;
      case 'struct':
      case 'union':
        return `decode${typeName(t.name)}(r)`;
      case 'optional':
        return `r.bool() ? ${this.decodeExpr(t.of)} : null`;
      case 'varArray':
      case 'fixedArray':
        throw new Error('arrays decode as statements');
    }
  }

  /** Statements that leave the decoded value in a new `const`/`let` named `target`. */
  private decodeStatements(t: ResolvedType, target: string, depth: number, out: string[]): void {
    if (this.isExpr(t)) {
      out.push(`const ${target} = ${this.decodeExpr(t)};`);
      return;
    }
    const d = depth === 0 ? '' : String(depth);
    if (t.k === 'optional') {
      out.push(`let ${target}: ${this.tsType(t)} = null;`);
      out.push(`if (r.bool()) {`);
      const inner: string[] = [];
      this.decodeStatements(t.of, `present${d}`, depth + 1, inner);
      inner.push(`${target} = present${d};`);
      out.push(...inner.map((l) => `  ${l}`), '}');
      return;
    }
    if (t.k !== 'varArray' && t.k !== 'fixedArray') throw new Error('unreachable');
    const loop =
      t.k === 'varArray'
        ? `for (let i${d} = 0, n${d} = r.count(${t.max}, ${this.model.minSize(t.of)}); i${d} < n${d}; i${d}++)`
        : `for (let i${d} = 0; i${d} < ${t.length}; i${d}++)`;
    out.push(`const ${target}: ${this.tsType(t)} = [];`);
    if (this.isExpr(t.of)) {
      out.push(`${loop} ${target}.push(${this.decodeExpr(t.of)});`);
      return;
    }
    out.push(`${loop} {`);
    const inner: string[] = [];
    this.decodeStatements(t.of, `item${d}`, depth + 1, inner);
    inner.push(`${target}.push(item${d});`);
    out.push(...inner.map((l) => `  ${l}`), '}');
  }

  /** Statements that write `value` (an expression naming a field or loop item). */
  private encodeStatements(
    t: ResolvedType,
    value: string,
    where: string,
    depth: number,
    out: string[],
  ): void {
    const d = depth === 0 ? '' : String(depth);
    switch (t.k) {
      case 'int':
      case 'enum':
        out.push(`w.int(${value});`);
        return;
      case 'uint':
      case 'hyper':
      case 'uhyper':
      case 'bool':
      case 'float':
      case 'double':
        out.push(`w.${t.k}(${value});`);
        return;
      case 'string':
        out.push(`w.string(${value}, ${t.max});`);
        return;
      case 'opaque':
        out.push(`w.opaque(${value}, ${t.max});`);
        return;
      case 'fixedOpaque':
        out.push(`w.fixedOpaque(${value}, ${t.length});`);
        return;
      case 'struct':
      case 'union':
        out.push(`encode${typeName(t.name)}(w, ${value});`);
        return;
      case 'optional': {
        out.push(`if (${value} === null) {`, '  w.uint(0);', '} else {', '  w.uint(1);');
        const inner: string[] = [];
        this.encodeStatements(t.of, value, where, depth, inner);
        out.push(...inner.map((l) => `  ${l}`), '}');
        return;
      }
      case 'varArray':
        out.push(`w.count(${value}.length, ${t.max});`);
        break;
      case 'fixedArray':
        out.push(
          `if (${value}.length !== ${t.length}) {`,
          `  throw new RangeError(\`${where} must have ${t.length} items, got \${${value}.length}\`);`,
          '}',
        );
        break;
    }
    const inner: string[] = [];
    this.encodeStatements(t.of, `item${d}`, where, depth + 1, inner);
    if (inner.length === 1) out.push(`for (const item${d} of ${value}) ${inner[0] ?? ''}`);
    else out.push(`for (const item${d} of ${value}) {`, ...inner.map((l) => `  ${l}`), '}');
  }

  struct(name: string, fields: readonly Declaration[]): string[] {
    const ts = typeName(name);
    const resolved = fields.map((f) => ({
      decl: f,
      key: fieldName(f.name),
      type: this.model.resolve(f, name),
    }));
    const out: string[] = [];
    out.push(`/** ${name} */`, `export interface ${ts} {`);
    for (const f of resolved)
      out.push(`  ${f.key}: ${this.tsType(f.type)}; // ${declText(f.decl)}`);
    out.push('}', '');

    out.push(`export function encode${ts}(w: XdrWriter, v: ${ts}): void {`);
    for (const f of resolved) {
      const lines: string[] = [];
      this.encodeStatements(f.type, `v.${f.key}`, `${ts}.${f.key}`, 0, lines);
      out.push(...lines.map((l) => `  ${l}`));
    }
    out.push('}', '');

    out.push(`export function decode${ts}(r: XdrReader): ${ts} {`);
    if (resolved.every((f) => this.isExpr(f.type))) {
      // Property values are evaluated in source order, which is the wire order.
      out.push('  return {');
      for (const f of resolved) out.push(`    ${f.key}: ${this.decodeExpr(f.type)},`);
      out.push('  };');
    } else {
      const props: string[] = [];
      for (const f of resolved) {
        const local = localName(f.key);
        const lines: string[] = [];
        this.decodeStatements(f.type, local, 0, lines);
        out.push(...lines.map((l) => `  ${l}`));
        props.push(local === f.key ? f.key : `${f.key}: ${local}`);
      }
      out.push(`  return { ${props.join(', ')} };`);
    }
    out.push('}');
    return out;
  }

  union(def: Extract<Definition, { kind: 'union' }>): string[] {
    const ts = typeName(def.name);
    const disc = this.model.resolve(def.discriminant, def.name);
    if (disc.k !== 'int' && disc.k !== 'uint' && disc.k !== 'enum' && disc.k !== 'bool') {
      throw new Error(`${def.name}: unsupported discriminant type ${disc.k}`);
    }
    const dkey = fieldName(def.discriminant.name);
    const dlocal = localName(dkey);
    const isBool = disc.k === 'bool';
    const literal = (n: number): string => (isBool ? String(n !== 0) : String(n));
    const seen = new Set<number>();
    const arms: UnionArmPlan[] = def.arms.map((a) => {
      const values = a.cases.map((c) => this.model.value(c));
      for (const n of values) {
        if (seen.has(n)) throw new Error(`${def.name}: case ${n} appears twice`);
        seen.add(n);
      }
      return this.armPlan(
        def.name,
        values.map(literal).join(' | '),
        values.length === 1 ? values.map(literal)[0] : undefined,
        values.map(literal),
        a.decl,
        a.cases.map((c) => (c.kind === 'name' ? c.name : c.text)).join(', '),
      );
    });
    const hasDefault = def.defaultArm !== undefined;
    const defaultArm = hasDefault
      ? this.armPlan(
          def.name,
          isBool ? 'boolean' : 'number',
          undefined,
          [],
          def.defaultArm ?? undefined,
          'default',
        )
      : undefined;
    const allArms = defaultArm === undefined ? arms : [...arms, defaultArm];
    const shape = (a: UnionArmPlan): string =>
      a.key === undefined || a.type === undefined
        ? `{ ${dkey}: ${a.discType} }`
        : `{ ${dkey}: ${a.discType}; ${a.key}: ${this.tsType(a.type)} }`;

    const out: string[] = [
      `/** ${def.name}: switch (${declText(def.discriminant)}) */`,
      `export type ${ts} =`,
    ];
    allArms.forEach((a, i) => {
      const semi = i === allArms.length - 1 ? ';' : '';
      out.push(`  | ${shape(a)}${semi} // ${a.comment}`);
    });
    out.push('');

    // Encode. With a default arm, `case 1:` still admits the `number` arm, so each arm is
    // read through a local cast to its own shape.
    out.push(`export function encode${ts}(w: XdrWriter, v: ${ts}): void {`);
    const discLines: string[] = [];
    this.encodeStatements(disc, `v.${dkey}`, `${ts}.${dkey}`, 0, discLines);
    out.push(...discLines.map((l) => `  ${l}`), `  switch (v.${dkey}) {`);
    for (const a of allArms) {
      if (a.labels.length === 0) out.push('    default:');
      for (const label of a.labels) out.push(`    case ${label}:`);
      if (a.key === undefined || a.type === undefined) {
        out.push('      return;');
        continue;
      }
      const lines: string[] = [];
      if (hasDefault) {
        lines.push(`const arm = v as ${shape(a)};`);
        this.encodeStatements(a.type, `arm.${a.key}`, `${ts}.${a.key}`, 0, lines);
      } else {
        this.encodeStatements(a.type, `v.${a.key}`, `${ts}.${a.key}`, 0, lines);
      }
      lines.push('return;');
      if (hasDefault) {
        out[out.length - 1] += ' {';
        out.push(...lines.map((l) => `      ${l}`), '    }');
      } else {
        out.push(...lines.map((l) => `      ${l}`));
      }
    }
    if (!hasDefault) {
      out.push(
        '    default:',
        `      throw new RangeError(\`${ts}: no arm for ${dkey} \${String((v as { ${dkey}: unknown }).${dkey})}\`);`,
      );
    }
    out.push('  }', '}', '');

    // Decode.
    out.push(
      `export function decode${ts}(r: XdrReader): ${ts} {`,
      `  const ${dlocal} = ${this.decodeExpr(disc)};`,
      `  switch (${dlocal}) {`,
    );
    for (const a of allArms) {
      if (a.labels.length === 0) out.push('    default:');
      for (const label of a.labels) out.push(`    case ${label}:`);
      // One case: the literal itself. Several, or default: the discriminant, cast to the arm's
      // type because TS does not narrow a number to literals in a switch.
      const discValue = a.single ?? (a.labels.length > 1 ? `${dlocal} as ${a.discType}` : dlocal);
      const head = dkey === discValue ? dkey : `${dkey}: ${discValue}`;
      if (a.key === undefined || a.type === undefined) {
        out.push(`      return { ${head} };`);
      } else if (this.isExpr(a.type)) {
        out.push(`      return { ${head}, ${a.key}: ${this.decodeExpr(a.type)} };`);
      } else {
        const local = localName(a.key);
        const lines: string[] = [];
        this.decodeStatements(a.type, local, 0, lines);
        out[out.length - 1] += ' {';
        out.push(
          ...lines.map((l) => `      ${l}`),
          `      return { ${head}, ${local === a.key ? a.key : `${a.key}: ${local}`} };`,
          '    }',
        );
      }
    }
    if (!hasDefault) {
      out.push(
        '    default:',
        `      throw new XdrError(\`${ts}: unknown ${dkey} \${String(${dlocal})}\`);`,
      );
    }
    out.push('  }', '}');
    return out;
  }

  private armPlan(
    union: string,
    discType: string,
    single: string | undefined,
    labels: string[],
    decl: Declaration | undefined,
    comment: string,
  ): UnionArmPlan {
    return {
      discType,
      single,
      labels,
      comment,
      key: decl === undefined ? undefined : fieldName(decl.name),
      type: decl === undefined ? undefined : this.model.resolve(decl, union),
    };
  }

  /** An enum as an `as const` object keyed by libvirt's own member names. */
  enumObject(name: string, exportName: string): string[] {
    const def = this.model.enumDef(name);
    const out = [`/** ${name} */`, `export const ${exportName} = {`];
    for (const m of def.members) out.push(`  ${m.name}: ${this.model.value(m.value)},`);
    out.push('} as const;');
    return out;
  }
}
