// Generates src/libvirt/protocol.gen.ts from libvirt's own protocol definition, the way
// go-libvirt's internal/lvgen does, but only for the procedures kvm2 calls.
//
// Approach: a small hand-written lexer and recursive-descent parser (scripts/protocol-gen/)
// read the XDR language of remote_protocol.x, virnetprotocol.x and virkeepaliveprotocol.x into
// an AST; a model follows typedefs down to wire shapes and resolves constants; the emitter
// writes, for every struct/union reachable from the ALLOWLIST below (plus remote_error), a TS
// interface and straight-line encode/decode functions over XdrWriter/XdrReader with the .x
// limits inlined, then one Procedure descriptor per allowed procedure. Stream procedures are
// the ones whose `/** ... */` annotation says @readstream or @writestream.
//
// Usage: npx tsx scripts/gen-protocol.ts [--source DIR] [--out FILE] [--check]
//   DIR defaults to $LIBVIRT_SOURCE, then /var/cache/kvm2/libvirt-src/installed (where
//   `npm run setup` unpacks Debian's source package of the installed libvirt). The .x files
//   are read from there and never copied into this repository.
//   --check exits 1 if the output file differs from a fresh generation.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { generateProtocol } from './protocol-gen/generate.js';

/** REMOTE_PROC_* names to generate; adding a procedure is one line here. */
export const ALLOWLIST: readonly string[] = [
  // Connection
  'REMOTE_PROC_CONNECT_OPEN',
  'REMOTE_PROC_CONNECT_CLOSE',
  'REMOTE_PROC_CONNECT_GET_TYPE',
  'REMOTE_PROC_CONNECT_GET_VERSION',
  'REMOTE_PROC_CONNECT_GET_LIB_VERSION',
  'REMOTE_PROC_CONNECT_GET_HOSTNAME',
  'REMOTE_PROC_CONNECT_GET_URI',
  'REMOTE_PROC_CONNECT_GET_CAPABILITIES',
  'REMOTE_PROC_CONNECT_SUPPORTS_FEATURE',
  'REMOTE_PROC_AUTH_LIST',
  'REMOTE_PROC_AUTH_POLKIT',
  'REMOTE_PROC_CONNECT_REGISTER_CLOSE_CALLBACK',
  'REMOTE_PROC_CONNECT_UNREGISTER_CLOSE_CALLBACK',
  'REMOTE_PROC_NODE_GET_INFO',
  // Domains
  'REMOTE_PROC_CONNECT_LIST_ALL_DOMAINS',
  'REMOTE_PROC_DOMAIN_LOOKUP_BY_NAME',
  'REMOTE_PROC_DOMAIN_LOOKUP_BY_UUID',
  'REMOTE_PROC_DOMAIN_GET_STATE',
  'REMOTE_PROC_DOMAIN_GET_INFO',
  'REMOTE_PROC_DOMAIN_DEFINE_XML',
  'REMOTE_PROC_DOMAIN_DEFINE_XML_FLAGS',
  'REMOTE_PROC_DOMAIN_CREATE',
  'REMOTE_PROC_DOMAIN_CREATE_WITH_FLAGS',
  'REMOTE_PROC_DOMAIN_DESTROY',
  'REMOTE_PROC_DOMAIN_DESTROY_FLAGS',
  'REMOTE_PROC_DOMAIN_UNDEFINE',
  'REMOTE_PROC_DOMAIN_UNDEFINE_FLAGS',
  'REMOTE_PROC_DOMAIN_GET_XML_DESC',
  'REMOTE_PROC_DOMAIN_GET_METADATA',
  'REMOTE_PROC_DOMAIN_SET_METADATA',
  'REMOTE_PROC_DOMAIN_INTERFACE_ADDRESSES',
  'REMOTE_PROC_DOMAIN_SHUTDOWN_FLAGS',
  // Domain events: registering for them, and the MESSAGEs they come as
  'REMOTE_PROC_CONNECT_DOMAIN_EVENT_CALLBACK_REGISTER_ANY',
  'REMOTE_PROC_CONNECT_DOMAIN_EVENT_CALLBACK_DEREGISTER_ANY',
  'REMOTE_PROC_DOMAIN_EVENT_CALLBACK_LIFECYCLE',
  'REMOTE_PROC_DOMAIN_EVENT_CALLBACK_AGENT_LIFECYCLE',
  'REMOTE_PROC_DOMAIN_GET_AUTOSTART',
  'REMOTE_PROC_DOMAIN_SET_AUTOSTART',
  'REMOTE_PROC_DOMAIN_IS_ACTIVE',
  // Storage
  'REMOTE_PROC_CONNECT_LIST_ALL_STORAGE_POOLS',
  'REMOTE_PROC_STORAGE_POOL_LOOKUP_BY_NAME',
  'REMOTE_PROC_STORAGE_POOL_LOOKUP_BY_UUID',
  'REMOTE_PROC_STORAGE_POOL_LOOKUP_BY_VOLUME',
  'REMOTE_PROC_STORAGE_POOL_GET_INFO',
  'REMOTE_PROC_STORAGE_POOL_REFRESH',
  'REMOTE_PROC_STORAGE_POOL_IS_ACTIVE',
  'REMOTE_PROC_STORAGE_POOL_GET_XML_DESC',
  'REMOTE_PROC_STORAGE_POOL_LIST_ALL_VOLUMES',
  'REMOTE_PROC_STORAGE_POOL_CREATE',
  'REMOTE_PROC_STORAGE_POOL_DESTROY',
  'REMOTE_PROC_STORAGE_POOL_DEFINE_XML',
  'REMOTE_PROC_STORAGE_POOL_UNDEFINE',
  'REMOTE_PROC_STORAGE_VOL_LOOKUP_BY_NAME',
  'REMOTE_PROC_STORAGE_VOL_CREATE_XML',
  'REMOTE_PROC_STORAGE_VOL_CREATE_XML_FROM',
  'REMOTE_PROC_STORAGE_VOL_DELETE',
  'REMOTE_PROC_STORAGE_VOL_GET_INFO',
  'REMOTE_PROC_STORAGE_VOL_GET_PATH',
  'REMOTE_PROC_STORAGE_VOL_GET_XML_DESC',
  'REMOTE_PROC_STORAGE_VOL_UPLOAD',
  'REMOTE_PROC_STORAGE_VOL_DOWNLOAD',
  // Networks
  'REMOTE_PROC_CONNECT_LIST_ALL_NETWORKS',
  'REMOTE_PROC_NETWORK_LOOKUP_BY_NAME',
  'REMOTE_PROC_NETWORK_IS_ACTIVE',
  'REMOTE_PROC_NETWORK_GET_XML_DESC',
];

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const OUTPUT_FILE = join(REPO_ROOT, 'src/libvirt/protocol.gen.ts');
/** Debian's source package of the installed libvirt, as `npm run setup` unpacks it. */
export const DEFAULT_SOURCE = '/var/cache/kvm2/libvirt-src/installed';

function main(): void {
  const { values } = parseArgs({
    options: {
      source: { type: 'string' },
      out: { type: 'string' },
      check: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const sourceDir = values.source ?? process.env['LIBVIRT_SOURCE'] ?? DEFAULT_SOURCE;
  const outFile = values.out === undefined ? OUTPUT_FILE : resolve(values.out);
  const version = process.env['LIBVIRT_VERSION'];
  const result = generateProtocol({
    sourceDir,
    allowlist: ALLOWLIST,
    ...(version === undefined ? {} : { libvirtVersion: version }),
  });
  const summary =
    `${result.procedures} procedures, ${result.types} types, ${result.enums} enums, ` +
    `${Buffer.byteLength(result.code)} bytes, libvirt ${result.libvirtVersion}`;
  if (values.check) {
    let current = '';
    try {
      current = readFileSync(outFile, 'utf8');
    } catch {
      // A missing file is simply out of date.
    }
    if (current !== result.code) {
      console.error(`${outFile} is out of date; run npx tsx scripts/gen-protocol.ts`);
      process.exitCode = 1;
      return;
    }
    console.log(`${outFile} is up to date (${summary})`);
    return;
  }
  writeFileSync(outFile, result.code);
  console.log(`wrote ${outFile}: ${summary}`);
}

if (
  process.argv[1] !== undefined &&
  import.meta.url === pathToFileURL(resolve(process.argv[1])).href
) {
  try {
    main();
  } catch (err) {
    console.error(`gen-protocol: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  }
}
