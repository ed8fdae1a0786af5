// Tokenizer for the XDR language (RFC 4506 §6) as libvirt's .x files use it. `%` lines are
// rpcgen pass-through C and are dropped; `/** ... */` comments are kept as `doc` tokens because
// libvirt puts its procedure annotations (@generate, @readstream, ...) in them.

export type TokenKind = 'ident' | 'number' | 'punct' | 'doc' | 'eof';

export interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  /** 1-based, for error messages. */
  readonly line: number;
}

const PUNCT = new Set(['{', '}', '(', ')', '[', ']', '<', '>', ';', ',', '=', '*', ':', '-']);

export class XdrSyntaxError extends Error {
  override name = 'XdrSyntaxError';
  constructor(message: string, file: string, line: number) {
    super(`${file}:${line}: ${message}`);
  }
}

function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}

function isIdentPart(c: string): boolean {
  return isIdentStart(c) || (c >= '0' && c <= '9');
}

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

export function tokenize(src: string, file = '<input>'): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let atLineStart = true;
  const n = src.length;

  while (i < n) {
    const c = src.charAt(i);
    if (c === '\n') {
      line++;
      i++;
      atLineStart = true;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\f') {
      i++;
      continue;
    }
    if (c === '%' && atLineStart) {
      while (i < n && src.charAt(i) !== '\n') i++;
      continue;
    }
    atLineStart = false;

    if (c === '/' && src.charAt(i + 1) === '*') {
      const end = src.indexOf('*/', i + 2);
      if (end < 0) throw new XdrSyntaxError('unterminated comment', file, line);
      const body = src.slice(i, end + 2);
      const startLine = line;
      for (const ch of body) if (ch === '\n') line++;
      // `/**/` is an empty plain comment, not a doc comment.
      if (body.startsWith('/**') && body.length > 4) {
        tokens.push({ kind: 'doc', text: body, line: startLine });
      }
      i = end + 2;
      continue;
    }
    if (c === '/' && src.charAt(i + 1) === '/') {
      while (i < n && src.charAt(i) !== '\n') i++;
      continue;
    }
    if (isIdentStart(c)) {
      const start = i;
      while (i < n && isIdentPart(src.charAt(i))) i++;
      tokens.push({ kind: 'ident', text: src.slice(start, i), line });
      continue;
    }
    if (isDigit(c)) {
      const start = i;
      if (c === '0' && (src.charAt(i + 1) === 'x' || src.charAt(i + 1) === 'X')) {
        i += 2;
        while (i < n && /[0-9a-fA-F]/.test(src.charAt(i))) i++;
      } else {
        while (i < n && isDigit(src.charAt(i))) i++;
      }
      if (i < n && isIdentPart(src.charAt(i))) {
        throw new XdrSyntaxError(`bad number ${src.slice(start, i + 1)}`, file, line);
      }
      tokens.push({ kind: 'number', text: src.slice(start, i), line });
      continue;
    }
    if (PUNCT.has(c)) {
      tokens.push({ kind: 'punct', text: c, line });
      i++;
      continue;
    }
    throw new XdrSyntaxError(`unexpected character ${JSON.stringify(c)}`, file, line);
  }
  tokens.push({ kind: 'eof', text: '', line });
  return tokens;
}
