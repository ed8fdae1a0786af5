// Recursive-descent parser for the XDR subset libvirt's .x files use: const, typedef, enum,
// struct, union (switch/case/default) and declarations with `<N>`, `[N]` and `*`. It builds a
// plain AST and resolves nothing: sizes may name constants defined later or in C headers.
import type {
  Declaration,
  Definition,
  EnumMember,
  PrimitiveName,
  Shape,
  TypeSpec,
  UnionArm,
  Value,
  XdrFile,
} from './ast.js';
import { tokenize, XdrSyntaxError, type Token } from './lexer.js';

const PRIMITIVE_WORDS = new Set(['int', 'hyper', 'char', 'short']);

/** Reads the `@key: value` lines out of a `/** ... *\/` comment. */
export function parseAnnotations(doc: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of doc.matchAll(/@([A-Za-z_]+)\s*:\s*([^\n*]*)/g)) {
    const key = m[1] ?? '';
    const list = out.get(key) ?? [];
    list.push((m[2] ?? '').trim());
    out.set(key, list);
  }
  return out;
}

class Parser {
  private pos = 0;
  private pendingDoc: Token | undefined;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly file: string,
  ) {}

  private peekToken(): Token {
    // Doc comments matter only above enum members; everywhere else they are skipped.
    for (;;) {
      const t = this.tokens[this.pos];
      if (t === undefined) throw new XdrSyntaxError('read past end of input', this.file, 0);
      if (t.kind !== 'doc') return t;
      this.pendingDoc = t;
      this.pos++;
    }
  }

  private next(): Token {
    const t = this.peekToken();
    this.pos++;
    return t;
  }

  private fail(message: string, t: Token = this.peekToken()): never {
    throw new XdrSyntaxError(message, this.file, t.line);
  }

  private isPunct(text: string): boolean {
    const t = this.peekToken();
    return t.kind === 'punct' && t.text === text;
  }

  private isWord(text: string): boolean {
    const t = this.peekToken();
    return t.kind === 'ident' && t.text === text;
  }

  private expectPunct(text: string): void {
    const t = this.next();
    if (t.kind !== 'punct' || t.text !== text) {
      this.fail(`expected '${text}', found '${t.text || 'end of file'}'`, t);
    }
  }

  private expectWord(text: string): void {
    const t = this.next();
    if (t.kind !== 'ident' || t.text !== text) {
      this.fail(`expected '${text}', found '${t.text || 'end of file'}'`, t);
    }
  }

  private ident(): string {
    const t = this.next();
    if (t.kind !== 'ident')
      this.fail(`expected an identifier, found '${t.text || 'end of file'}'`, t);
    return t.text;
  }

  private value(): Value {
    const t = this.next();
    if (t.kind === 'ident') return { kind: 'name', name: t.text };
    let negative = false;
    let num = t;
    if (t.kind === 'punct' && t.text === '-') {
      negative = true;
      num = this.next();
    }
    if (num.kind !== 'number')
      this.fail(`expected a number or a constant name, found '${num.text}'`, num);
    const text = num.text;
    let value: number;
    if (/^0[xX]/.test(text)) value = parseInt(text.slice(2), 16);
    else if (text.length > 1 && text.startsWith('0')) value = parseInt(text.slice(1), 8);
    else value = parseInt(text, 10);
    if (!Number.isSafeInteger(value)) this.fail(`number ${text} is out of range`, num);
    return {
      kind: 'literal',
      value: negative ? -value : value,
      text: negative ? `-${text}` : text,
    };
  }

  parseFile(): XdrFile {
    const definitions: Definition[] = [];
    while (this.peekToken().kind !== 'eof') definitions.push(this.definition());
    return { file: this.file, definitions };
  }

  private definition(): Definition {
    const t = this.next();
    if (t.kind !== 'ident') this.fail(`expected a definition, found '${t.text}'`, t);
    let def: Definition;
    switch (t.text) {
      case 'const': {
        const name = this.ident();
        this.expectPunct('=');
        def = { kind: 'const', name, value: this.value() };
        break;
      }
      case 'typedef': {
        const decl = this.declaration();
        if (decl === undefined) this.fail('typedef of void', t);
        def = { kind: 'typedef', name: decl.name, decl };
        break;
      }
      case 'enum': {
        const name = this.ident();
        def = { kind: 'enum', name, members: this.enumBody() };
        break;
      }
      case 'struct': {
        const name = this.ident();
        def = { kind: 'struct', name, fields: this.structBody() };
        break;
      }
      case 'union': {
        const name = this.ident();
        def = { kind: 'union', name, ...this.unionBody() };
        break;
      }
      default:
        this.fail(`unsupported definition '${t.text}'`, t);
    }
    this.expectPunct(';');
    return def;
  }

  private enumBody(): EnumMember[] {
    this.expectPunct('{');
    const members: EnumMember[] = [];
    for (;;) {
      this.pendingDoc = undefined;
      const name = this.ident();
      const doc = this.pendingDoc as Token | undefined;
      this.expectPunct('=');
      const value = this.value();
      members.push({
        name,
        value,
        annotations: doc === undefined ? new Map() : parseAnnotations(doc.text),
      });
      if (this.isPunct(',')) {
        this.next();
        continue;
      }
      break;
    }
    this.expectPunct('}');
    return members;
  }

  private structBody(): Declaration[] {
    this.expectPunct('{');
    const fields: Declaration[] = [];
    while (!this.isPunct('}')) {
      const decl = this.declaration();
      if (decl === undefined) this.fail('void is not a struct member');
      fields.push(decl);
      this.expectPunct(';');
    }
    this.next();
    if (fields.length === 0) this.fail('empty struct');
    return fields;
  }

  private unionBody(): Omit<Extract<Definition, { kind: 'union' }>, 'kind' | 'name'> {
    this.expectWord('switch');
    this.expectPunct('(');
    const discriminant = this.declaration();
    if (discriminant === undefined || discriminant.shape.kind !== 'scalar') {
      this.fail('a union discriminant must be a plain scalar');
    }
    this.expectPunct(')');
    this.expectPunct('{');
    const arms: UnionArm[] = [];
    let defaultArm: Declaration | null | undefined;
    while (!this.isPunct('}')) {
      if (this.isWord('default')) {
        this.next();
        this.expectPunct(':');
        defaultArm = this.declaration() ?? null;
        this.expectPunct(';');
        continue;
      }
      const cases: Value[] = [];
      while (this.isWord('case')) {
        this.next();
        cases.push(this.value());
        this.expectPunct(':');
      }
      if (cases.length === 0) this.fail(`expected 'case' or 'default'`);
      arms.push({ cases, decl: this.declaration() });
      this.expectPunct(';');
    }
    this.next();
    return { discriminant, arms, defaultArm };
  }

  /** A declaration, or undefined for `void`. */
  private declaration(): Declaration | undefined {
    if (this.isWord('void')) {
      this.next();
      return undefined;
    }
    const type = this.typeSpec();
    if (this.isPunct('*')) {
      this.next();
      return { name: this.ident(), type, shape: { kind: 'optional' } };
    }
    const name = this.ident();
    let shape: Shape = { kind: 'scalar' };
    if (this.isPunct('[')) {
      this.next();
      shape = { kind: 'fixedArray', length: this.value() };
      this.expectPunct(']');
    } else if (this.isPunct('<')) {
      this.next();
      const max = this.isPunct('>') ? undefined : this.value();
      this.expectPunct('>');
      shape = { kind: 'varArray', max };
    }
    if (type.kind === 'string' && shape.kind !== 'varArray') {
      this.fail(`string '${name}' needs <N>`);
    }
    if (type.kind === 'opaque' && shape.kind !== 'varArray' && shape.kind !== 'fixedArray') {
      this.fail(`opaque '${name}' needs <N> or [N]`);
    }
    return { name, type, shape };
  }

  private typeSpec(): TypeSpec {
    const t = this.next();
    if (t.kind !== 'ident') this.fail(`expected a type, found '${t.text}'`, t);
    switch (t.text) {
      case 'unsigned': {
        // `unsigned` alone means `unsigned int` (virNetMessageHeader uses it).
        const u = this.peekToken();
        if (u.kind === 'ident' && PRIMITIVE_WORDS.has(u.text)) {
          this.next();
          return { kind: 'primitive', name: `unsigned ${u.text}` as PrimitiveName };
        }
        return { kind: 'primitive', name: 'unsigned int' };
      }
      case 'int':
      case 'hyper':
      case 'char':
      case 'short':
      case 'bool':
      case 'float':
      case 'double':
        return { kind: 'primitive', name: t.text };
      case 'string':
        return { kind: 'string' };
      case 'opaque':
        return { kind: 'opaque' };
      case 'quadruple':
        return this.fail('quadruple is not supported', t);
      case 'struct':
      case 'union':
      case 'enum':
        // C-style `struct foo x;` refers to a named type; inline bodies are not supported.
        if (this.peekToken().kind === 'ident') return { kind: 'ref', name: this.ident() };
        return this.fail(`inline ${t.text} definitions are not supported`, t);
      default:
        return { kind: 'ref', name: t.text };
    }
  }
}

export function parseXdr(src: string, file = '<input>'): XdrFile {
  return new Parser(tokenize(src, file), file).parseFile();
}
