// The protocol generator and what it generated: the parser on made-up .x text, the emitted
// codecs byte for byte against hand-written XDR, round trips of random values, hostile input
// rejected with XdrError only, and the committed protocol.gen.ts matching a fresh generation.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { ALLOWLIST, DEFAULT_SOURCE, OUTPUT_FILE, REPO_ROOT } from '../../scripts/gen-protocol.js';
import { generateProtocol, PROTOCOL_FILES } from '../../scripts/protocol-gen/generate.js';
import { tokenize } from '../../scripts/protocol-gen/lexer.js';
import { fieldName, procedureName, typeName } from '../../scripts/protocol-gen/model.js';
import { parseXdr } from '../../scripts/protocol-gen/parser.js';
import type { Procedure } from '../../src/libvirt/procedure.js';
import * as gen from '../../src/libvirt/protocol.gen.js';
import { XdrError, XdrReader, XdrWriter } from '../../src/libvirt/xdr.js';

/** Hex with one field per argument, so each fixture line can carry its own comment. */
function hex(...fields: string[]): Buffer {
  return Buffer.from(fields.join('').replace(/\s+/g, ''), 'hex');
}

function encode<A>(p: Procedure<A, unknown>, args: A): Buffer {
  const w = new XdrWriter(16);
  p.encode(w, args);
  return Buffer.from(w.finish());
}

function bytesOf<T>(enc: (w: XdrWriter, v: T) => void, value: T): Buffer {
  const w = new XdrWriter(16);
  enc(w, value);
  return Buffer.from(w.finish());
}

function decodeAll<T>(decode: (r: XdrReader) => T, buf: Buffer): T {
  const r = new XdrReader(buf);
  const v = decode(r);
  r.expectEnd('the value');
  return v;
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

function isProcedure(v: unknown): v is Procedure<unknown, unknown> {
  return typeof v === 'object' && v !== null && 'proc' in v && 'encode' in v && 'decode' in v;
}

/** Every Procedure descriptor the generated module exports. */
const procedures = Object.values(gen as Record<string, unknown>).filter(isProcedure);

const uuidA = Buffer.from('00112233445566778899aabbccddeeff', 'hex');

describe('generated codecs: byte-exact against hand-written XDR', () => {
  it('DomainLookupByName args: a 5-byte name is padded to 8', () => {
    expect(encode(gen.DomainLookupByName, { name: 'vm-bb' })).toEqual(
      hex(
        '00000005', // name length 5
        '766d2d6262 000000', // "vm-bb" + 3 bytes of padding
      ),
    );
  });

  it('ConnectOpen args: a present and an absent optional name', () => {
    expect(encode(gen.ConnectOpen, { name: 'qemu:///system', flags: 0 })).toEqual(
      hex(
        '00000001', // name present (a 4-byte bool, not 01000000)
        '0000000e', // length 14
        '71656d753a2f2f2f73797374656d 0000', // "qemu:///system" + 2 bytes of padding
        '00000000', // flags
      ),
    );
    expect(encode(gen.ConnectOpen, { name: null, flags: 2 })).toEqual(
      hex(
        '00000000', // name absent
        '00000002', // flags
      ),
    );
  });

  it('void args encode to nothing and void rets decode from nothing', () => {
    expect(encode(gen.ConnectClose, undefined)).toHaveLength(0);
    expect(decodeAll(gen.ConnectClose.decode, Buffer.alloc(0))).toBeUndefined();
  });

  it('DomainGetInfo ret: 32 bytes, unsigned char and short in full words', () => {
    const bytes = hex(
      '00000001', // state: unsigned char 1 (running)
      '0000000000200000', // maxMem: 2097152 KiB
      '0000000000100000', // memory: 1048576 KiB
      '00000002', // nrVirtCpu: unsigned short 2
      '0000001cbe991a14', // cpuTime: 123456789012 ns
    );
    expect(bytes).toHaveLength(32);
    expect(decodeAll(gen.DomainGetInfo.decode, bytes)).toEqual({
      state: 1,
      maxMem: 2097152n,
      memory: 1048576n,
      nrVirtCpu: 2,
      cpuTime: 123456789012n,
    });
  });

  it('StorageVolGetInfo ret: 20 bytes, a sign-extended char', () => {
    const bytes = hex(
      '00000000', // type: char 0 (VIR_STORAGE_VOL_FILE)
      '0000000040000000', // capacity: 1 GiB
      '0000000000310000', // allocation: 3211264 bytes
    );
    expect(bytes).toHaveLength(20);
    const info = decodeAll(gen.StorageVolGetInfo.decode, bytes);
    expect(info).toEqual({ type: 0, capacity: 1073741824n, allocation: 3211264n });
    expect(bytesOf(gen.encodeStorageVolGetInfoRet, info)).toEqual(bytes);
  });

  it('ConnectListAllDomains ret: two domains, then the count', () => {
    const bytes = hex(
      '00000002', // domains: 2 items
      '00000004 766d2d61', //   [0].name "vm-a"
      '00112233445566778899aabbccddeeff', //   [0].uuid (16 bytes, no padding)
      '00000007', //   [0].id 7
      '00000005 766d2d6262000000', //   [1].name "vm-bb" + padding
      'ffeeddccbbaa99887766554433221100', //   [1].uuid
      'ffffffff', //   [1].id -1 (inactive)
      '00000002', // ret 2
    );
    const ret = decodeAll(gen.ConnectListAllDomains.decode, bytes);
    expect(ret).toEqual({
      domains: [
        { name: 'vm-a', uuid: uuidA, id: 7 },
        { name: 'vm-bb', uuid: Buffer.from(uuidA).reverse(), id: -1 },
      ],
      ret: 2,
    });
    expect(bytesOf(gen.encodeConnectListAllDomainsRet, ret)).toEqual(bytes);
  });

  it('DomainInterfaceAddresses ret: hwaddr absent on one interface, present on the other', () => {
    const bytes = hex(
      '00000002', // ifaces: 2 items
      '00000002 6c6f0000', //   [0].name "lo"
      '00000000', //   [0].hwaddr absent
      '00000000', //   [0].addrs: 0 items
      '00000004 65746830', //   [1].name "eth0"
      '00000001', //   [1].hwaddr present
      '00000011 35323a35343a30303a31323a33343a3536000000', //   "52:54:00:12:34:56" + padding
      '00000002', //   [1].addrs: 2 items
      '00000000', //     [0].type 0 (VIR_IP_ADDR_TYPE_IPV4)
      '0000000e 3139322e3136382e3132322e31300000', //     [0].addr "192.168.122.10"
      '00000018', //     [0].prefix 24
      '00000001', //     [1].type 1 (VIR_IP_ADDR_TYPE_IPV6)
      '00000007 666538303a3a3100', //     [1].addr "fe80::1"
      '00000040', //     [1].prefix 64
    );
    const ret = decodeAll(gen.DomainInterfaceAddresses.decode, bytes);
    expect(ret).toEqual({
      ifaces: [
        { name: 'lo', hwaddr: null, addrs: [] },
        {
          name: 'eth0',
          hwaddr: '52:54:00:12:34:56',
          addrs: [
            { type: 0, addr: '192.168.122.10', prefix: 24 },
            { type: 1, addr: 'fe80::1', prefix: 64 },
          ],
        },
      ],
    });
    expect(bytesOf(gen.encodeDomainInterfaceAddressesRet, ret)).toEqual(bytes);
  });

  it('decodeRemoteError: the live "Domain not found" payload (LIBVIRT-RPC-FACTS §2)', () => {
    const bytes = hex(
      '0000002a', // code 42 VIR_ERR_NO_DOMAIN
      '0000000a', // domain 10 VIR_FROM_QEMU
      '00000001', // message present
      '00000032', //   length 50
      '446f6d61696e206e6f7420666f756e643a206e6f20646f6d61696e2077697468206d61746368696e67206e616d65202778270000',
      '00000002', // level 2 VIR_ERR_ERROR
      '00000000', // dom absent
      '00000001', // str1 present
      '00000014 446f6d61696e206e6f7420666f756e643a202573', //   "Domain not found: %s"
      '00000001', // str2 present
      '00000020 6e6f20646f6d61696e2077697468206d61746368696e67206e616d6520277827', //   detail
      '00000000', // str3 absent
      'ffffffff', // int1 -1
      'ffffffff', // int2 -1
      '00000000', // net absent
    );
    const err: gen.RemoteError = decodeAll(gen.decodeRemoteError, bytes);
    expect(err).toEqual({
      code: 42,
      domain: 10,
      message: "Domain not found: no domain with matching name 'x'",
      level: 2,
      dom: null,
      str1: 'Domain not found: %s',
      str2: "no domain with matching name 'x'",
      str3: null,
      int1: -1,
      int2: -1,
      net: null,
    });
    expect(bytesOf(gen.encodeRemoteError, err)).toEqual(bytes);
  });

  it('NodeGetInfo ret: char model[32] is 32 words, not 32 bytes', () => {
    const model = Array.from('x86_64', (c) => c.charCodeAt(0)).concat(
      new Array<number>(26).fill(0),
    );
    const info = {
      model,
      memory: 8n,
      cpus: 4,
      mhz: 2000,
      nodes: 1,
      sockets: 1,
      cores: 2,
      threads: 2,
    };
    const bytes = bytesOf(gen.encodeNodeGetInfoRet, info);
    expect(bytes).toHaveLength(32 * 4 + 8 + 6 * 4);
    expect(bytes.subarray(0, 8)).toEqual(hex('00000078', '00000038')); // 'x', '8'
    expect(decodeAll(gen.NodeGetInfo.decode, bytes)).toEqual(info);
  });
});

describe('generated procedure descriptors', () => {
  it('has one descriptor per allowlisted procedure, with the remote program', () => {
    expect(procedures).toHaveLength(ALLOWLIST.length);
    for (const p of procedures) {
      expect(p.program).toBe(0x20008086);
      expect(p.version).toBe(1);
    }
  });

  it('names them in PascalCase with acronyms upper-case', () => {
    expect(gen.DomainDefineXMLFlags).toMatchObject({ name: 'DomainDefineXMLFlags', proc: 350 });
    expect(gen.DomainLookupByUUID).toMatchObject({ name: 'DomainLookupByUUID', proc: 24 });
    expect(gen.ConnectGetURI).toMatchObject({ name: 'ConnectGetURI', proc: 110 });
    expect(gen.AuthList).toMatchObject({ name: 'AuthList', proc: 66 });
    expect(procedureName('REMOTE_PROC_NODE_GET_CPU_STATS')).toBe('NodeGetCPUStats');
    expect(procedureName('REMOTE_PROC_DOMAIN_GET_OS_TYPE')).toBe('DomainGetOSType');
    expect(typeName('remote_nonnull_domain')).toBe('NonnullDomain');
    expect(typeName('remote_domain_ip_addr')).toBe('DomainIPAddr');
    expect(typeName('remote_error')).toBe('RemoteError');
    expect(fieldName('need_results')).toBe('needResults');
    expect(fieldName('nrVirtCpu')).toBe('nrVirtCpu');
  });

  it('marks exactly the stream procedures', () => {
    const streams = procedures.filter((p) => p.stream !== undefined).map((p) => [p.name, p.stream]);
    expect(streams).toEqual([
      ['StorageVolUpload', 'write'],
      ['StorageVolDownload', 'read'],
    ]);
    expect('stream' in gen.DomainGetInfo).toBe(false);
  });

  it('exports the framing and keepalive constants', () => {
    expect(gen.KEEPALIVE_PROGRAM).toBe(0x6b656570);
    expect([gen.KEEPALIVE_PROC_PING, gen.KEEPALIVE_PROC_PONG]).toEqual([1, 2]);
    expect(gen.VIR_NET_MESSAGE_MAX).toBe(33554432);
    expect(gen.VIR_NET_MESSAGE_LEGACY_PAYLOAD_MAX).toBe(262120);
    expect(gen.MessageType.VIR_NET_STREAM_HOLE).toBe(6);
    expect(gen.MessageStatus.VIR_NET_CONTINUE).toBe(2);
    expect(gen.AuthType.REMOTE_AUTH_POLKIT).toBe(2);
    expect(gen.REMOTE_STRING_MAX).toBe(4194304);
  });
});

describe('generated codecs: hostile input', () => {
  it('rejects every truncation of a valid payload with XdrError', () => {
    const cases: [(r: XdrReader) => unknown, Buffer][] = [
      [
        gen.ConnectListAllDomains.decode,
        bytesOf(gen.encodeConnectListAllDomainsRet, {
          domains: [{ name: 'a', uuid: uuidA, id: 1 }],
          ret: 1,
        }),
      ],
      [
        gen.DomainGetInfo.decode,
        bytesOf(gen.encodeDomainGetInfoRet, {
          state: 1,
          maxMem: 1n,
          memory: 1n,
          nrVirtCpu: 1,
          cpuTime: 1n,
        }),
      ],
      [gen.AuthList.decode, bytesOf(gen.encodeAuthListRet, { types: [0, 2] })],
      [
        gen.decodeDomainInterfaceAddressesRet,
        bytesOf(gen.encodeDomainInterfaceAddressesRet, {
          ifaces: [{ name: 'e', hwaddr: 'm', addrs: [{ type: 0, addr: '1.2.3.4', prefix: 8 }] }],
        }),
      ],
    ];
    for (const [decode, bytes] of cases) {
      for (let n = 0; n < bytes.length; n++) {
        expect(thrown(() => decode(new XdrReader(bytes.subarray(0, n))))).toBeInstanceOf(XdrError);
      }
    }
  });

  it('rejects an array count above its .x limit with XdrError', () => {
    // AuthList: types<REMOTE_AUTH_TYPE_LIST_MAX = 20>, 21 claimed and present.
    const tooMany = Buffer.concat([hex('00000015'), Buffer.alloc(21 * 4)]);
    const err = thrown(() => gen.AuthList.decode(new XdrReader(tooMany)));
    expect(err).toBeInstanceOf(XdrError);
    expect(String(err)).toMatch(/limit of 20/);
    // ConnectListAllDomains: 16385 > REMOTE_DOMAIN_LIST_MAX.
    expect(
      thrown(() => gen.ConnectListAllDomains.decode(new XdrReader(hex('00004001')))),
    ).toBeInstanceOf(XdrError);
    // Within the limit but more than the bytes left could hold (each item is at least 24 bytes).
    expect(
      thrown(() =>
        gen.ConnectListAllDomains.decode(new XdrReader(hex('00000002', '0'.repeat(80)))),
      ),
    ).toBeInstanceOf(XdrError);
  });

  it('rejects a string longer than its limit with XdrError', () => {
    expect(
      thrown(() =>
        gen.decodeRemoteError(new XdrReader(hex('0000002a 0000000a 00000001 ffffffff'))),
      ),
    ).toBeInstanceOf(XdrError);
  });

  it('throws nothing but XdrError on random bytes, for every decoder', () => {
    const decoders: ((r: XdrReader) => unknown)[] = procedures.map((p) => p.decode);
    decoders.push(gen.decodeRemoteError);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat(decoders.length - 1), (bytes, i) => {
        const decode = decoders[i];
        if (decode === undefined) return;
        const err = thrown(() => decode(new XdrReader(Buffer.from(bytes))));
        if (err !== undefined) expect(err).toBeInstanceOf(XdrError);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('generated codecs: round trips', () => {
  // 'binary' covers all of Unicode (astral planes included, lone surrogates excluded).
  const text = fc.string({ unit: 'binary', maxLength: 40 });
  const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
  const uint32 = fc.integer({ min: 0, max: 0xffffffff });
  const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
  const uuid = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((a) => Buffer.from(a));
  const domain = fc.record({ name: text, uuid, id: int32 });
  const network = fc.record({ name: text, uuid });
  const optional = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(a, { nil: null });

  function roundTrips<T>(
    arb: fc.Arbitrary<T>,
    enc: (w: XdrWriter, v: T) => void,
    dec: (r: XdrReader) => T,
  ): void {
    fc.assert(
      fc.property(arb, (value) => {
        const w = new XdrWriter(8);
        enc(w, value);
        const bytes = Buffer.from(w.finish());
        expect(bytes.length % 4).toBe(0);
        expect(decodeAll(dec, bytes)).toEqual(value);
      }),
      { numRuns: 300 },
    );
  }

  it('RemoteError', () => {
    const error = fc.record({
      code: int32,
      domain: int32,
      message: optional(text),
      level: int32,
      dom: optional(domain),
      str1: optional(text),
      str2: optional(text),
      str3: optional(text),
      int1: int32,
      int2: int32,
      net: optional(network),
    });
    roundTrips(error, gen.encodeRemoteError, gen.decodeRemoteError);
  });

  it('DomainInterfaceAddressesRet (arrays of structs with arrays and optionals)', () => {
    const iface = fc.record({
      name: text,
      hwaddr: optional(text),
      addrs: fc.array(fc.record({ type: int32, addr: text, prefix: uint32 }), { maxLength: 4 }),
    });
    roundTrips(
      fc.record({ ifaces: fc.array(iface, { maxLength: 4 }) }),
      gen.encodeDomainInterfaceAddressesRet,
      gen.decodeDomainInterfaceAddressesRet,
    );
  });

  it('ConnectListAllDomainsRet and DomainGetInfoRet (bigints, unsigned words)', () => {
    roundTrips(
      fc.record({ domains: fc.array(domain, { maxLength: 5 }), ret: uint32 }),
      gen.encodeConnectListAllDomainsRet,
      gen.decodeConnectListAllDomainsRet,
    );
    roundTrips(
      fc.record({ state: uint32, maxMem: u64, memory: u64, nrVirtCpu: uint32, cpuTime: u64 }),
      gen.encodeDomainGetInfoRet,
      gen.decodeDomainGetInfoRet,
    );
  });

  it('StorageVolCreateXMLFromArgs and DomainSetMetadataArgs (nested structs, optionals)', () => {
    roundTrips(
      fc.record({
        pool: network,
        xml: text,
        clonevol: fc.record({ pool: text, name: text, key: text }),
        flags: uint32,
      }),
      gen.encodeStorageVolCreateXMLFromArgs,
      gen.decodeStorageVolCreateXMLFromArgs,
    );
    roundTrips(
      fc.record({
        dom: domain,
        type: int32,
        metadata: optional(text),
        key: optional(text),
        uri: optional(text),
        flags: uint32,
      }),
      gen.encodeDomainSetMetadataArgs,
      gen.decodeDomainSetMetadataArgs,
    );
  });

  // TextDecoder drops a leading U+FEFF unless told { ignoreBOM: true }.
  it('keeps a string that starts with U+FEFF', () => {
    const bytes = bytesOf(gen.encodeDomainLookupByNameArgs, { name: '\uFEFFvm' });
    expect(decodeAll(gen.decodeDomainLookupByNameArgs, bytes)).toEqual({
      name: '\uFEFFvm',
    });
  });
});

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

// A miniature libvirt tree: the generator end to end, including unions (the real allowlist
// reaches none), checked by the TypeScript compiler and then run.
describe('generator on a miniature libvirt tree', () => {
  const root = mkdtempSync(join(tmpdir(), 'kvm2-protocol-gen-'));
  const tree = join(root, 'libvirt-1.2.3');
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const files: Record<string, string> = {
    [PROTOCOL_FILES.remote]: `
const REMOTE_STRING_MAX = 64;
typedef string remote_nonnull_string<REMOTE_STRING_MAX>;
typedef remote_nonnull_string *remote_string;
typedef opaque remote_uuid[VIR_UUID_BUFLEN];
const REMOTE_THING_LIST_MAX = 3;
const REMOTE_UNUSED_MAX = 9;
struct remote_nonnull_domain { remote_nonnull_string name; remote_uuid uuid; int id; };
struct remote_nonnull_network { remote_nonnull_string name; remote_uuid uuid; };
typedef remote_nonnull_domain *remote_domain;
typedef remote_nonnull_network *remote_network;
struct remote_error {
    int code; int domain; remote_string message; int level; remote_domain dom;
    remote_string str1; remote_string str2; remote_string str3; int int1; int int2;
    remote_network net;
};
enum remote_color { REMOTE_RED = 0, REMOTE_GREEN = 1, REMOTE_BLUE = 2 };
union remote_value switch (remote_color color) {
 case REMOTE_RED:
     int level;
 case REMOTE_GREEN:
 case REMOTE_BLUE:
     remote_nonnull_string names<REMOTE_THING_LIST_MAX>;
};
union remote_maybe switch (unsigned int kind) {
 case 0:
     void;
 default:
     unsigned hyper big;
};
struct remote_thing_put_args {
    remote_value value;
    remote_maybe maybe;
    remote_color colors<REMOTE_THING_LIST_MAX>;
    char tag[2];
    double ratio;
    bool on;
    short s;
    opaque cookie<REMOTE_THING_LIST_MAX>;
};
struct remote_thing_put_ret { remote_string note; };
struct remote_unused_args { int never<REMOTE_UNUSED_MAX>; };
const REMOTE_PROGRAM = 0x20008086;
const REMOTE_PROTOCOL_VERSION = 1;
enum remote_procedure {
    /** @generate: both */
    REMOTE_PROC_THING_PUT = 1,
    /**
     * @generate: none
     * @readstream: 1
     */
    REMOTE_PROC_THING_READ = 2,
    /** @generate: both */
    REMOTE_PROC_UNUSED = 3
};
`,
    [PROTOCOL_FILES.net]: `
const VIR_NET_MESSAGE_MAX = 33554432;
enum virNetMessageType { VIR_NET_CALL = 0, VIR_NET_REPLY = 1 };
enum virNetMessageStatus { VIR_NET_OK = 0, VIR_NET_ERROR = 1 };
`,
    [PROTOCOL_FILES.keepalive]: `
const KEEPALIVE_PROGRAM = 0x6b656570;
const KEEPALIVE_PROTOCOL_VERSION = 1;
enum keepalive_procedure { KEEPALIVE_PROC_PING = 1, KEEPALIVE_PROC_PONG = 2 };
`,
  };
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(tree, rel, '..'), { recursive: true });
    writeFileSync(join(tree, rel), text);
  }
  const allowlist = ['REMOTE_PROC_THING_PUT', 'REMOTE_PROC_THING_READ'];
  const result = generateProtocol({ sourceDir: tree, allowlist });

  it('emits only what the allowlist reaches, with the version from the tree name', () => {
    expect(result).toMatchObject({ libvirtVersion: '1.2.3', procedures: 2 });
    expect(result.code).toMatch(/^\/\/ GENERATED FILE, DO NOT EDIT\. .* libvirt 1\.2\.3/);
    expect(result.code).toContain('export const REMOTE_THING_LIST_MAX = 3;');
    expect(result.code).toContain('export const ThingPut: Procedure<ThingPutArgs, ThingPutRet>');
    expect(result.code).toContain('export const ThingRead: Procedure<void, undefined>');
    expect(result.code).toContain("  stream: 'read',");
    expect(result.code).not.toMatch(/Unused|REMOTE_UNUSED_MAX/);
    expect(result.code).toContain('export const Color = {');
  });

  it('is deterministic', () => {
    expect(generateProtocol({ sourceDir: tree, allowlist }).code).toBe(result.code);
  });

  it('fails loudly, naming every allowlisted procedure the .x file lacks', () => {
    expect(() =>
      generateProtocol({
        sourceDir: tree,
        allowlist: ['REMOTE_PROC_THING_PUT', 'REMOTE_PROC_NOPE', 'REMOTE_PROC_GONE'],
      }),
    ).toThrow(/REMOTE_PROC_NOPE, REMOTE_PROC_GONE/);
  });

  it('emits code that compiles under the strict tsconfig and round-trips unions', async () => {
    const out = join(root, 'out');
    mkdirSync(out);
    writeFileSync(join(out, 'package.json'), '{ "type": "module" }');
    const lib = join(REPO_ROOT, 'src/libvirt');
    const code = result.code
      .replace("'./procedure.js'", JSON.stringify(join(lib, 'procedure.js')))
      .replace("'./xdr.js'", JSON.stringify(join(lib, 'xdr.js')));
    const file = join(out, 'protocol.gen.ts');
    writeFileSync(file, code);

    const program = ts.createProgram([file], {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      noFallthroughCasesInSwitch: true,
      verbatimModuleSyntax: true,
      noEmit: true,
      skipLibCheck: true,
      types: ['node'],
      typeRoots: [join(REPO_ROOT, 'node_modules/@types')],
    });
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);

    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    const put = mod['ThingPut'] as Procedure<unknown, unknown>;
    const decodeArgs = mod['decodeThingPutArgs'] as (r: XdrReader) => unknown;
    const args = {
      value: { color: 2, names: ['a', 'bc'] },
      maybe: { kind: 7, big: 2n ** 63n },
      colors: [0, 2],
      tag: [-1, 65],
      ratio: 0.5,
      on: true,
      s: -2,
      cookie: Buffer.from([1, 2]),
    };
    const bytes = encode(put, args);
    expect(bytes).toEqual(
      hex(
        '00000002', // value.color REMOTE_BLUE
        '00000002 00000001 61000000 00000002 62630000', // value.names ["a", "bc"]
        '00000007 8000000000000000', // maybe: kind 7 (default arm), big 2^63
        '00000002 00000000 00000002', // colors [RED, BLUE]
        'ffffffff 00000041', // tag: char[2] as two sign-extended words
        '3fe0000000000000', // ratio 0.5
        '00000001', // on
        'fffffffe', // s: short -2
        '00000002 01020000', // cookie
      ),
    );
    expect(decodeAll(decodeArgs, bytes)).toEqual(args);
    const decodeValue = mod['decodeValue'] as (r: XdrReader) => unknown;
    expect(decodeAll(decodeValue, hex('00000000 0000002a'))).toEqual({ color: 0, level: 42 });
    expect(thrown(() => decodeValue(new XdrReader(hex('00000009'))))).toBeInstanceOf(XdrError);
    const decodeMaybe = mod['decodeMaybe'] as (r: XdrReader) => unknown;
    expect(decodeAll(decodeMaybe, hex('00000000'))).toEqual({ kind: 0 });
  });
});

const source = process.env['LIBVIRT_SOURCE'] ?? DEFAULT_SOURCE;

/** The drift check never skips: without the source it fails, saying how to get it. */
function requireSource(): void {
  if (!existsSync(join(source, PROTOCOL_FILES.remote))) {
    throw new Error(
      `libvirt's protocol files are not at ${source}: run \`npm run setup\` (it unpacks Debian's ` +
        'libvirt source package there), or set LIBVIRT_SOURCE to a libvirt source tree',
    );
  }
}

describe(`libvirt's own .x files (${source})`, () => {
  it('the committed protocol.gen.ts equals a fresh, deterministic generation', () => {
    requireSource();
    const first = generateProtocol({ sourceDir: source, allowlist: ALLOWLIST }).code;
    const second = generateProtocol({ sourceDir: source, allowlist: ALLOWLIST }).code;
    expect(second).toBe(first);
    expect(readFileSync(OUTPUT_FILE, 'utf8')).toBe(first);
  });

  it('parse completely, qemu_protocol.x included', () => {
    requireSource();
    for (const rel of [...Object.values(PROTOCOL_FILES), 'src/remote/qemu_protocol.x']) {
      const file = parseXdr(readFileSync(join(source, rel), 'utf8'), rel);
      expect(file.definitions.length).toBeGreaterThan(0);
    }
  });
});
