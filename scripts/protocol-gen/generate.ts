// Turns libvirt's .x files plus an allowlist of procedures into the text of protocol.gen.ts.
// Pure apart from reading the .x files: the same inputs always give the same bytes.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Definition, XdrFile } from './ast.js';
import { CodecEmitter } from './codecs.js';
import { procedureName, ProtocolModel, typeName, type ResolvedType } from './model.js';
import { parseXdr } from './parser.js';

export const PROTOCOL_FILES = {
  remote: 'src/remote/remote_protocol.x',
  net: 'src/rpc/virnetprotocol.x',
  keepalive: 'src/rpc/virkeepaliveprotocol.x',
} as const;

export interface GenerateOptions {
  /** A libvirt source tree (only the .x files in PROTOCOL_FILES are read). */
  readonly sourceDir: string;
  /** REMOTE_PROC_* names. */
  readonly allowlist: readonly string[];
  /** Overrides the version read from meson.build or the directory name. */
  readonly libvirtVersion?: string;
}

export interface GenerateResult {
  readonly code: string;
  readonly libvirtVersion: string;
  readonly procedures: number;
  /** Structs and unions emitted (each with an interface, an encoder and a decoder). */
  readonly types: number;
  readonly enums: number;
}

interface ProcedureInfo {
  readonly member: string;
  readonly name: string;
  readonly proc: number;
  readonly args: string | undefined;
  readonly ret: string | undefined;
  readonly stream: 'read' | 'write' | undefined;
}

/** Enum objects for the framing layer, named for the engine rather than after virNet*. */
const NET_ENUMS = [
  ['virNetMessageType', 'MessageType'],
  ['virNetMessageStatus', 'MessageStatus'],
] as const;

/** The error payload every REPLY/STREAM with status ERROR carries (virnetprotocol.x twin). */
const ERROR_STRUCT = 'remote_error';

export function detectLibvirtVersion(sourceDir: string): string {
  const meson = join(sourceDir, 'meson.build');
  if (existsSync(meson)) {
    const m = /^project\([^)]*?version\s*:\s*'([^']+)'/ms.exec(readFileSync(meson, 'utf8'));
    if (m?.[1] !== undefined) return m[1];
  }
  const m = /(?:^|[-_])(\d+\.\d+\.\d+)$/.exec(basename(resolve(sourceDir)));
  if (m?.[1] !== undefined) return m[1];
  throw new Error(
    `cannot tell the libvirt version of ${sourceDir}: no meson.build and the directory is not ` +
      `named like libvirt-X.Y.Z; set LIBVIRT_VERSION`,
  );
}

function readXdr(sourceDir: string, rel: string): { file: XdrFile; sha256: string } {
  const path = join(sourceDir, rel);
  if (!existsSync(path))
    throw new Error(`${path} not found: is ${sourceDir} a libvirt source tree?`);
  const text = readFileSync(path, 'utf8');
  return {
    file: parseXdr(text, rel),
    sha256: createHash('sha256').update(text).digest('hex'),
  };
}

function enumOf(file: XdrFile, name: string): Extract<Definition, { kind: 'enum' }> {
  const def = file.definitions.find((d) => d.kind === 'enum' && d.name === name);
  if (def?.kind !== 'enum') throw new Error(`${file.file}: enum ${name} not found`);
  return def;
}

function constsOf(file: XdrFile): Extract<Definition, { kind: 'const' }>[] {
  return file.definitions.filter((d) => d.kind === 'const');
}

export function generateProtocol(opts: GenerateOptions): GenerateResult {
  const remote = readXdr(opts.sourceDir, PROTOCOL_FILES.remote);
  const net = readXdr(opts.sourceDir, PROTOCOL_FILES.net);
  const keepalive = readXdr(opts.sourceDir, PROTOCOL_FILES.keepalive);
  const version = opts.libvirtVersion ?? detectLibvirtVersion(opts.sourceDir);
  const model = new ProtocolModel([remote.file, net.file, keepalive.file]);
  const codecs = new CodecEmitter(model);

  // Procedures: args/ret follow libvirt's own convention (gendispatch.pl), remote_<proc>_args
  // and remote_<proc>_ret, each absent when void. An event is a procedure the daemon sends as a
  // MESSAGE with remote_<proc>_msg as its body: received like a reply, so it stands as the ret.
  const procEnum = enumOf(remote.file, 'remote_procedure');
  const members = new Map(procEnum.members.map((m) => [m.name, m]));
  const missing = opts.allowlist.filter((n) => !members.has(n));
  if (missing.length > 0) {
    throw new Error(`not in ${PROTOCOL_FILES.remote} of libvirt ${version}: ${missing.join(', ')}`);
  }
  const duplicates = opts.allowlist.filter((n, i) => opts.allowlist.indexOf(n) !== i);
  if (duplicates.length > 0) throw new Error(`allowlisted twice: ${duplicates.join(', ')}`);

  const procedures: ProcedureInfo[] = opts.allowlist.map((member) => {
    const m = members.get(member);
    if (m === undefined) throw new Error(`unreachable: ${member}`);
    const base = `remote_${member.slice('REMOTE_PROC_'.length).toLowerCase()}`;
    const pick = (suffix: string): string | undefined => {
      const name = `${base}_${suffix}`;
      if (!model.hasType(name)) return undefined;
      if (model.type(name).kind !== 'struct') throw new Error(`${name} is not a struct`);
      return name;
    };
    const read = m.annotations.has('readstream');
    const write = m.annotations.has('writestream');
    if (read && write) throw new Error(`${member} is both @readstream and @writestream`);
    return {
      member,
      name: procedureName(member),
      proc: model.value(m.value),
      args: pick('args'),
      ret: pick('ret') ?? pick('msg'),
      stream: read ? 'read' : write ? 'write' : undefined,
    };
  });

  // Everything reachable from the allowed procedures and the error struct.
  const reachable = new Set<string>();
  const visit = (t: ResolvedType): void => {
    switch (t.k) {
      case 'optional':
      case 'varArray':
      case 'fixedArray':
        visit(t.of);
        return;
      case 'enum':
        reachable.add(t.name);
        return;
      case 'struct':
      case 'union':
        visitType(t.name);
        return;
      default:
        return;
    }
  };
  const visitType = (name: string): void => {
    if (reachable.has(name)) return;
    reachable.add(name);
    const def = model.type(name);
    if (def.kind === 'struct') {
      for (const f of def.fields) visit(model.resolve(f, name));
    } else if (def.kind === 'union') {
      visit(model.resolve(def.discriminant, name));
      for (const a of def.arms) if (a.decl !== undefined) visit(model.resolve(a.decl, name));
      if (def.defaultArm) visit(model.resolve(def.defaultArm, name));
    }
  };
  for (const p of procedures) {
    if (p.args !== undefined) visitType(p.args);
    if (p.ret !== undefined) visitType(p.ret);
  }
  visitType(ERROR_STRUCT);

  // TS keeps types and values apart, so the interface NodeGetCPUStats (remote_node_get_cpu_stats)
  // and the procedure constant NodeGetCPUStats may share a name; two values or two types may not.
  const values = new Set<string>();
  const types = new Set<string>();
  const claimIn =
    (space: Set<string>) =>
    (name: string): string => {
      if (space.has(name)) throw new Error(`two generated exports are both named ${name}`);
      space.add(name);
      return name;
    };
  const claim = claimIn(values);
  const claimType = claimIn(types);

  // Types in .x source order, so dependencies read before their users.
  const typeDefs = remote.file.definitions.filter(
    (d) =>
      (d.kind === 'struct' || d.kind === 'union' || d.kind === 'enum') && reachable.has(d.name),
  );
  const typeBlocks: string[][] = [];
  const enumBlocks: string[][] = [];
  let typeCount = 0;
  for (const def of typeDefs) {
    if (def.kind === 'enum') {
      enumBlocks.push(codecs.enumObject(def.name, claim(typeName(def.name))));
    } else if (def.kind === 'struct') {
      claimType(typeName(def.name));
      claim(`encode${typeName(def.name)}`);
      claim(`decode${typeName(def.name)}`);
      typeBlocks.push(codecs.struct(def.name, def.fields));
      typeCount++;
    } else if (def.kind === 'union') {
      claimType(typeName(def.name));
      claim(`encode${typeName(def.name)}`);
      claim(`decode${typeName(def.name)}`);
      typeBlocks.push(codecs.union(def));
      typeCount++;
    }
  }
  const usesXdrError = typeDefs.some((d) => d.kind === 'union' && d.defaultArm === undefined);

  const L: string[] = [];
  const fmtConst = (name: string): string => {
    const c = model.constant(name);
    return `export const ${claim(name)} = ${c.text};`;
  };

  const files = [
    [PROTOCOL_FILES.remote, remote.sha256],
    [PROTOCOL_FILES.net, net.sha256],
    [PROTOCOL_FILES.keepalive, keepalive.sha256],
  ] as const;
  L.push(
    `// GENERATED FILE, DO NOT EDIT. Made by scripts/gen-protocol.ts from libvirt ${version}:`,
    ...files.map(([f, h]) => `//   ${f} (sha256 ${h.slice(0, 16)})`),
    `// Regenerate: npx tsx scripts/gen-protocol.ts --source <libvirt-${version} source tree>`,
    '// (or `npm run gen:protocol`; the source defaults to $LIBVIRT_SOURCE, then',
    '// /var/cache/kvm2/libvirt-src/installed, which `npm run setup` fills). To add a procedure,',
    '// add its REMOTE_PROC_ name to the allowlist in scripts/gen-protocol.ts. Field comments give',
    '// the .x declaration, in wire order.',
    '',
    "import type { Procedure } from './procedure.js';",
    usesXdrError
      ? "import { XdrError, type XdrReader, type XdrWriter } from './xdr.js';"
      : "import type { XdrReader, XdrWriter } from './xdr.js';",
    '',
    `// ${'-'.repeat(20)} Programs (remote_protocol.x, virkeepaliveprotocol.x)`,
    '',
    fmtConst('REMOTE_PROGRAM'),
    fmtConst('REMOTE_PROTOCOL_VERSION'),
    ...constsOf(keepalive.file).map((c) => fmtConst(c.name)),
    ...enumOf(keepalive.file, 'keepalive_procedure').members.map(
      (m) => `export const ${claim(m.name)} = ${model.value(m.value)};`,
    ),
    '',
    `// ${'-'.repeat(20)} Framing (virnetprotocol.x)`,
    '',
    ...constsOf(net.file).map((c) => fmtConst(c.name)),
    '',
  );
  for (const [xdrName, tsName] of NET_ENUMS) {
    L.push(...codecs.enumObject(xdrName, claim(tsName)), '');
  }

  L.push(`// ${'-'.repeat(20)} Limits used by the types below (remote_protocol.x)`, '');
  const remoteConstOrder = constsOf(remote.file).map((c) => c.name);
  for (const name of remoteConstOrder) {
    if (model.usedConstants.has(name)) L.push(fmtConst(name));
  }
  L.push('');

  if (enumBlocks.length > 0) {
    L.push(`// ${'-'.repeat(20)} Enums (remote_protocol.x)`, '');
    for (const b of enumBlocks) L.push(...b, '');
  }

  L.push(`// ${'-'.repeat(20)} Types and their codecs (remote_protocol.x)`, '');
  for (const b of typeBlocks) L.push(...b, '');

  L.push(
    `// ${'-'.repeat(20)} Procedures`,
    '',
    '/** The payload of a procedure with void args or a void ret: nothing. */',
    `export function ${claim('encodeVoid')}(_w: XdrWriter, _v: void): void {`,
    '  // An empty payload.',
    '}',
    '',
    `export function ${claim('decodeVoid')}(_r: XdrReader): undefined {`,
    '  return undefined;',
    '}',
    '',
  );
  for (const p of procedures) {
    const args = p.args === undefined ? 'void' : typeName(p.args);
    const ret = p.ret === undefined ? 'undefined' : typeName(p.ret);
    L.push(
      `/** ${p.member} = ${p.proc}${p.stream === undefined ? '' : `, @${p.stream}stream`} */`,
      `export const ${claim(p.name)}: Procedure<${args}, ${ret}> = {`,
      `  name: '${p.name}',`,
      '  program: REMOTE_PROGRAM,',
      '  version: REMOTE_PROTOCOL_VERSION,',
      `  proc: ${p.proc},`,
      `  encode: ${p.args === undefined ? 'encodeVoid' : `encode${typeName(p.args)}`},`,
      `  decode: ${p.ret === undefined ? 'decodeVoid' : `decode${typeName(p.ret)}`},`,
      ...(p.stream === undefined ? [] : [`  stream: '${p.stream}',`]),
      '};',
      '',
    );
  }

  while (L[L.length - 1] === '') L.pop();
  return {
    code: `${L.join('\n')}\n`,
    libvirtVersion: version,
    procedures: procedures.length,
    types: typeCount,
    enums: enumBlocks.length + NET_ENUMS.length,
  };
}
