// The protocol generator's lexer and parser on made-up .x text.
import { describe, expect, it } from 'vitest';
import { tokenize } from '../../scripts/protocol-gen/lexer.js';
import { parseXdr } from '../../scripts/protocol-gen/parser.js';

describe('parser', () => {
  const snippet = `
/* A made-up protocol. */
%#include "not-xdr.h"
const SNIP_MAX = 8;
const SNIP_PROGRAM = 0x20008086;
const SNIP_ALIAS = SNIP_MAX;
typedef string snip_str<SNIP_MAX>;
typedef opaque snip_uuid[16];
typedef snip_str *snip_optstr;
enum snip_kind { SNIP_A = 1, SNIP_B = 2, SNIP_C = -3 };
struct snip_pair {
    snip_str key;             /* a bounded string */
    unsigned hyper val;
    unsigned flags;           /* bare 'unsigned' is unsigned int */
    snip_uuid ids[2];
    opaque blob<>;
    snip_pair *next;
};
union snip_value switch (snip_kind kind) {
 case SNIP_A:
     int i;
 case SNIP_B:
 case SNIP_C:
     snip_pair pairs<SNIP_MAX>;
 default:
     void;
};
enum snip_procedure {
    /* a plain comment is not an annotation */

    /**
     * @generate: both
     * @readstream: 1
     */
    SNIP_PROC_ONE = 1,

    /** @writestream: 2 */
    SNIP_PROC_TWO = 2
};
`;
  const file = parseXdr(snippet, 'snippet.x');
  const def = (name: string) => file.definitions.find((d) => d.name === name);

  it('reads constants, typedefs and enums', () => {
    expect(def('SNIP_MAX')).toEqual({
      kind: 'const',
      name: 'SNIP_MAX',
      value: { kind: 'literal', value: 8, text: '8' },
    });
    expect(def('SNIP_PROGRAM')).toMatchObject({ value: { value: 0x20008086, text: '0x20008086' } });
    expect(def('SNIP_ALIAS')).toMatchObject({ value: { kind: 'name', name: 'SNIP_MAX' } });
    expect(def('snip_str')).toMatchObject({
      kind: 'typedef',
      decl: {
        type: { kind: 'string' },
        shape: { kind: 'varArray', max: { kind: 'name', name: 'SNIP_MAX' } },
      },
    });
    expect(def('snip_uuid')).toMatchObject({
      decl: { type: { kind: 'opaque' }, shape: { kind: 'fixedArray', length: { value: 16 } } },
    });
    expect(def('snip_optstr')).toMatchObject({
      decl: { type: { kind: 'ref', name: 'snip_str' }, shape: { kind: 'optional' } },
    });
    const kind = def('snip_kind');
    expect(kind?.kind === 'enum' && kind.members.map((m) => [m.name, m.value])).toEqual([
      ['SNIP_A', { kind: 'literal', value: 1, text: '1' }],
      ['SNIP_B', { kind: 'literal', value: 2, text: '2' }],
      ['SNIP_C', { kind: 'literal', value: -3, text: '-3' }],
    ]);
  });

  it('reads struct members of every shape', () => {
    const pair = def('snip_pair');
    expect(pair?.kind).toBe('struct');
    if (pair?.kind !== 'struct') return;
    expect(pair.fields.map((f) => [f.name, f.type, f.shape.kind])).toEqual([
      ['key', { kind: 'ref', name: 'snip_str' }, 'scalar'],
      ['val', { kind: 'primitive', name: 'unsigned hyper' }, 'scalar'],
      ['flags', { kind: 'primitive', name: 'unsigned int' }, 'scalar'],
      ['ids', { kind: 'ref', name: 'snip_uuid' }, 'fixedArray'],
      ['blob', { kind: 'opaque' }, 'varArray'],
      ['next', { kind: 'ref', name: 'snip_pair' }, 'optional'],
    ]);
    expect(pair.fields[4]?.shape).toEqual({ kind: 'varArray', max: undefined });
  });

  it('reads unions with shared cases and a void default', () => {
    const value = def('snip_value');
    expect(value?.kind).toBe('union');
    if (value?.kind !== 'union') return;
    expect(value.discriminant).toMatchObject({
      name: 'kind',
      type: { kind: 'ref', name: 'snip_kind' },
    });
    expect(
      value.arms.map((a) => [
        a.cases.map((c) => (c.kind === 'name' ? c.name : c.value)),
        a.decl?.name,
      ]),
    ).toEqual([
      [['SNIP_A'], 'i'],
      [['SNIP_B', 'SNIP_C'], 'pairs'],
    ]);
    expect(value.defaultArm).toBeNull();
  });

  it('attaches /** */ annotations to the enum member below them', () => {
    const procs = def('snip_procedure');
    if (procs?.kind !== 'enum') throw new Error('not an enum');
    const [one, two] = procs.members;
    expect(one?.annotations.get('readstream')).toEqual(['1']);
    expect(one?.annotations.get('generate')).toEqual(['both']);
    expect(two?.annotations.get('writestream')).toEqual(['2']);
    expect(two?.annotations.has('readstream')).toBe(false);
  });

  it('reports syntax errors with file and line', () => {
    expect(() => parseXdr('const A = 1;\nstruct s { int x };', 'bad.x')).toThrow(
      /^bad\.x:2: expected ';'/,
    );
    expect(() => parseXdr('struct s { string x; };', 'bad.x')).toThrow(/string 'x' needs <N>/);
    expect(() => tokenize('const A = 1; @', 'bad.x')).toThrow(/bad\.x:1: unexpected character "@"/);
  });
});
