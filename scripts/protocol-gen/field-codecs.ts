// The codec of one value, whatever struct field or union arm holds it: its TS type, the
// expression or statements that decode it from an XdrReader and the statements that encode it
// to an XdrWriter, with every limit inlined as a literal. codecs.ts builds whole definitions
// out of these.
import type { Declaration, Value } from './ast.js';
import { typeName, type ProtocolModel, type ResolvedType } from './model.js';

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

export function localName(field: string): string {
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

export class FieldCodecs {
  constructor(protected readonly model: ProtocolModel) {}

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
  protected isExpr(t: ResolvedType): boolean {
    if (t.k === 'varArray' || t.k === 'fixedArray') return false;
    if (t.k === 'optional') return this.isExpr(t.of);
    return true;
  }

  protected decodeExpr(t: ResolvedType): string {
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
  protected decodeStatements(t: ResolvedType, target: string, depth: number, out: string[]): void {
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
  protected encodeStatements(
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
}
