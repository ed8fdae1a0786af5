// Where a configuration file fails to parse, and what kind of mistake it is, without a word of
// its text: a line may hold a password (redis.sentinel.password, a redis:// or qemu+ssh:// URI
// with one), and the message reaches the CLI's output and the worker's log. V8's JSON.parse
// quotes the text around the error ("…"assword": hunter2sec"… is not valid JSON") and gives no
// position then; the yaml package quotes tags and block headers. So neither message is used:
// JSON is scanned again here for the position, and YAML errors are told by their code.
import type { ErrorCode, YAMLError } from 'yaml';

export interface SyntaxProblem {
  /** From 1; undefined when the parser gave no position. */
  readonly line?: number | undefined;
  /** From 1, in UTF-16 units as the yaml package counts them. */
  readonly column?: number | undefined;
  readonly what: string;
}

/** `kvm2: not valid JSON at line 3, column 25: expected a value (…)`. */
export function syntaxIssue(format: 'JSON' | 'YAML', problem: SyntaxProblem): string {
  const { line, column, what } = problem;
  const where = line === undefined ? '' : ` at line ${line}, column ${column ?? 1}`;
  return `kvm2: not valid ${format}${where}: ${what}`;
}

const VALUE = 'expected a value (a string in double quotes, a number, true, false, null, [ or {)';
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERAL = /true|false|null/y;
const HEX4 = /[0-9a-fA-F]{4}/y;

type Expecting = 'value' | 'value-or-]' | 'key' | 'key-or-}' | 'colon' | 'comma-or-close' | 'end';

function lineColumn(text: string, at: number, what: string): SyntaxProblem {
  const before = text.slice(0, at);
  const lastBreak = before.lastIndexOf('\n');
  return { line: before.split('\n').length, column: at - lastBreak, what };
}

/** The end of the string that opens at `start` (a `"`), or the problem inside it. */
function stringEnd(text: string, start: number): number | { at: number; what: string } {
  for (let i = start + 1; i < text.length;) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return i + 1;
    if (c < 0x20) return { at: i, what: 'a line break or control character inside a string' };
    if (c !== 0x5c) {
      i += 1;
      continue;
    }
    const escaped = text[i + 1] ?? '';
    HEX4.lastIndex = i + 2;
    if ('"\\/bfnrt'.includes(escaped) && escaped !== '') i += 2;
    else if (escaped === 'u' && HEX4.test(text)) i += 6;
    else return { at: i, what: 'a bad escape in a string' };
  }
  return { at: start, what: 'a string is not closed' };
}

/**
 * The first syntax error of `text` as JSON (RFC 8259), or undefined when it has none. Called
 * once JSON.parse has refused the text; iterative, so a deeply nested file cannot overflow.
 */
export function jsonSyntaxProblem(text: string): SyntaxProblem | undefined {
  const open: ('{' | '[')[] = [];
  let expecting: Expecting = 'value';
  let i = 0;
  const afterValue = (): Expecting => (open.length === 0 ? 'end' : 'comma-or-close');
  const fail = (at: number, what: string): SyntaxProblem => lineColumn(text, at, what);
  for (;;) {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i += 1;
    const c = text[i];
    if (c === undefined) return expecting === 'end' ? undefined : fail(i, 'the text ends early');
    if (expecting === 'end') return fail(i, 'more text after the end of the configuration');
    if (expecting === 'colon') {
      if (c !== ':') return fail(i, "expected ':' after a key");
      [i, expecting] = [i + 1, 'value'];
    } else if (expecting === 'comma-or-close') {
      const close = open.at(-1) === '{' ? '}' : ']';
      if (c === ',') [i, expecting] = [i + 1, close === '}' ? 'key' : 'value'];
      else if (c === close) {
        open.pop();
        [i, expecting] = [i + 1, afterValue()];
      } else return fail(i, `expected ',' or '${close}'`);
    } else if (
      (expecting === 'key-or-}' && c === '}') ||
      (expecting === 'value-or-]' && c === ']')
    ) {
      open.pop();
      [i, expecting] = [i + 1, afterValue()];
    } else if (expecting === 'key' || expecting === 'key-or-}') {
      if (c !== '"') return fail(i, 'expected a key in double quotes');
      const end = stringEnd(text, i);
      if (typeof end !== 'number') return fail(end.at, end.what);
      [i, expecting] = [end, 'colon'];
    } else if (c === '{' || c === '[') {
      open.push(c);
      [i, expecting] = [i + 1, c === '{' ? 'key-or-}' : 'value-or-]'];
    } else if (c === '"') {
      const end = stringEnd(text, i);
      if (typeof end !== 'number') return fail(end.at, end.what);
      [i, expecting] = [end, afterValue()];
    } else {
      NUMBER.lastIndex = i;
      LITERAL.lastIndex = i;
      const token = NUMBER.exec(text) ?? LITERAL.exec(text);
      if (token === null) return fail(i, VALUE);
      const end = i + token[0].length;
      // `1.`, `2e`, `01`: a number cut short or run on, not a number and then something else.
      if (/[\d.eE+-]/.test(text[end] ?? '') && /^[\d-]/.test(token[0])) {
        return fail(i, 'a malformed number');
      }
      [i, expecting] = [end, afterValue()];
    }
  }
}

/** Each yaml error code as a kind of mistake; the package's own messages may quote the text. */
const YAML_MISTAKES: Readonly<Record<ErrorCode, string>> = Object.freeze({
  ALIAS_PROPS: 'an alias cannot have an anchor or a tag',
  BAD_ALIAS: 'a bad alias',
  BAD_COLLECTION_TYPE: 'a tag that does not fit its value',
  BAD_DIRECTIVE: 'a bad directive',
  BAD_DQ_ESCAPE: 'a bad escape in a double-quoted string',
  BAD_INDENT: 'bad indentation',
  BAD_PROP_ORDER: 'an anchor or a tag in the wrong place',
  BAD_SCALAR_START: 'a value that starts with a character YAML reserves (quote it)',
  BLOCK_AS_IMPLICIT_KEY: 'a block value used as a key',
  BLOCK_IN_FLOW: 'a block value inside [ ] or { }',
  DUPLICATE_KEY: 'a key is given twice',
  IMPOSSIBLE: 'the YAML parser failed',
  KEY_OVER_1024_CHARS: 'a key longer than 1024 characters',
  MISSING_CHAR: 'a closing quote or bracket, a comma, a colon or a space is missing',
  MULTILINE_IMPLICIT_KEY: 'a key that spans lines (a value with ": " in it needs quotes)',
  MULTIPLE_ANCHORS: 'more than one anchor on a value',
  MULTIPLE_DOCS: 'more than one document',
  MULTIPLE_TAGS: 'more than one tag on a value',
  NON_STRING_KEY: 'a key that is not a string',
  RESOURCE_EXHAUSTION: 'more than the parser takes',
  TAB_AS_INDENT: 'a tab used as indentation',
  TAG_RESOLVE_FAILED: 'an unknown tag (a value that starts with ! needs quotes)',
  UNEXPECTED_TOKEN:
    'unexpected text (a value that starts with | > ! & * or holds " #" needs quotes)',
});

/** A yaml parse error's position (prettyErrors gives it) and kind. */
export function yamlSyntaxProblem(error: YAMLError): SyntaxProblem {
  const at = error.linePos?.[0];
  // A code a later yaml adds is not in the table yet.
  const what = (YAML_MISTAKES as Partial<Record<string, string>>)[error.code] ?? 'a syntax error';
  return { line: at?.line, column: at?.col, what };
}
