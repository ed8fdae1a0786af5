// Emits the TypeScript for one struct, union or enum: its type, then straight-line encode and
// decode functions calling XdrWriter/XdrReader directly, with every limit inlined as a literal.
// Nothing here runs per call except the emitted code itself: no schema is consulted at run time.
import type { Declaration, Definition } from './ast.js';
import { declText, FieldCodecs, localName } from './field-codecs.js';
import { fieldName, typeName, type ResolvedType } from './model.js';

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

export class CodecEmitter extends FieldCodecs {
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
