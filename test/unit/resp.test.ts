// queues/resp.ts: kvm2's one-pass encoding of a script's request is the bytes ioredis would
// write for the same command, and it declines (ioredis encodes) what it cannot count in one
// pass: a string that is not all ASCII.
import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { encodeRequest, OnePassCommand } from '../../queues/resp.js';

/** What ioredis writes for `name` with `args`, as bytes. */
function ioredisBytes(name: string, args: (string | number | Buffer)[]): Buffer {
  const written = new Command(name, args).toWritable({});
  return typeof written === 'string' ? Buffer.from(written) : written;
}

/** The arguments as a Command holds them once made (numbers as strings). */
function held(name: string, args: (string | number | Buffer)[]): (string | Buffer)[] {
  return new Command(name, args).args as (string | Buffer)[];
}

const PACKED = Buffer.from([0xde, 0x00, 0x02, 0xa5, 0x74, 0x0d, 0x0a, 0xff, 0x00]);

const CASES: Record<string, (string | number | Buffer)[]> = {
  'strings only': ['sha', 2, '{p}:a', '{p}:b', 'value', ''],
  'a Buffer between strings (a completion)': ['sha', 1, '{p}:k', PACKED, '', 'x', 30000],
  'Buffers first, last and side by side': [PACKED, Buffer.alloc(0), PACKED, 'mid', PACKED],
  'an empty Buffer alone': [Buffer.alloc(0)],
  'no arguments': [],
  'CR and LF inside a value': ['line one\r\nline two', '\n', '\r'],
  // Lengths of one to five digits, and strings either side of the copy's 32-character switch.
  'lengths of every width': [
    'a'.repeat(9),
    'b'.repeat(10),
    'c'.repeat(31),
    'd'.repeat(32),
    'e'.repeat(33),
    'f'.repeat(99),
    'g'.repeat(100),
    'h'.repeat(1000),
    'i'.repeat(12345),
    Buffer.alloc(10_000, 7),
  ],
  'an argument count of three digits': Array.from({ length: 120 }, (_, i) => `k${i}`),
  // Strings built by concatenation, as keys are (V8 holds them as ropes until flattened).
  'strings built in pieces': [`{p}:${'q'.repeat(20)}:${'x'.repeat(20)}`, `${'y'.repeat(5)}${7}`],
};

describe('encodeRequest', () => {
  for (const [label, args] of Object.entries(CASES)) {
    it(`writes ioredis's bytes: ${label}`, () => {
      const ours = encodeRequest('evalsha', held('evalsha', args));
      expect(ours).toBeInstanceOf(Buffer);
      expect(ours?.equals(ioredisBytes('evalsha', args))).toBe(true);
    });
  }

  it('declines a string that is not all ASCII, wherever it is', () => {
    const long = 'x'.repeat(40);
    for (const odd of [
      'é',
      'ünïcode',
      '雪',
      '😀',
      'ascii then \u0080',
      `${'x'.repeat(31)}é`,
      `${'x'.repeat(32)}é`,
      `é${long}`,
      `${long}\u00ff`,
    ]) {
      expect(encodeRequest('evalsha', ['sha', odd])).toBeUndefined();
      expect(encodeRequest('evalsha', [odd, PACKED, 'tail'])).toBeUndefined();
      expect(encodeRequest('evalsha', ['head', PACKED, odd])).toBeUndefined();
    }
  });
});

describe('OnePassCommand', () => {
  it('writes as ioredis does when encodeRequest declines', () => {
    const args = ['sha', 1, '{p}:k', PACKED, 'message: disque plein à 100 %', '雪'];
    const written = new OnePassCommand('evalsha', args).toWritable({});
    const bytes = typeof written === 'string' ? Buffer.from(written) : written;
    expect(bytes.equals(ioredisBytes('evalsha', args))).toBe(true);
  });

  it('writes its own encoding otherwise, the same bytes as ioredis', () => {
    const args = ['sha', 1, '{p}:k', PACKED, 'x'];
    const written = new OnePassCommand('evalsha', args).toWritable({});
    expect(written).toEqual(encodeRequest('evalsha', held('evalsha', args)));
    expect(Buffer.isBuffer(written) && written.equals(ioredisBytes('evalsha', args))).toBe(true);
  });
});
