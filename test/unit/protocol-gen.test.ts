// The protocol generator end to end: the procedure descriptors it emitted, a run on a
// miniature libvirt tree, and the committed protocol.gen.ts matching a fresh generation.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { ALLOWLIST, DEFAULT_SOURCE, OUTPUT_FILE, REPO_ROOT } from '../../scripts/gen-protocol.js';
import { generateProtocol, PROTOCOL_FILES } from '../../scripts/protocol-gen/generate.js';
import { fieldName, procedureName, typeName } from '../../scripts/protocol-gen/model.js';
import { parseXdr } from '../../scripts/protocol-gen/parser.js';
import type { Procedure } from '../../src/libvirt/procedure.js';
import * as gen from '../../src/libvirt/protocol.gen.js';
import { XdrError, XdrReader } from '../../src/libvirt/xdr.js';
import { decodeAll, encode, hex, procedures, thrown } from '../harness/protocol-fixtures.js';

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
