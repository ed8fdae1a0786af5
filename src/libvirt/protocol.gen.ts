// GENERATED FILE, DO NOT EDIT. Made by scripts/gen-protocol.ts from libvirt 9.0.0:
//   src/remote/remote_protocol.x (sha256 7e1377e5acf8cfff)
//   src/rpc/virnetprotocol.x (sha256 e330a104ef46be4a)
//   src/rpc/virkeepaliveprotocol.x (sha256 aa5cfe80ec7eef09)
// Regenerate: npx tsx scripts/gen-protocol.ts --source <libvirt-9.0.0 source tree>
// (or `npm run gen:protocol`; the source defaults to $LIBVIRT_SOURCE, then
// /var/cache/kvm2/libvirt-src/installed, which `npm run setup` fills). To add a procedure,
// add its REMOTE_PROC_ name to the allowlist in scripts/gen-protocol.ts. Field comments give
// the .x declaration, in wire order.

import type { Procedure } from './procedure.js';
import type { XdrReader, XdrWriter } from './xdr.js';

// -------------------- Programs (remote_protocol.x, virkeepaliveprotocol.x)

export const REMOTE_PROGRAM = 0x20008086;
export const REMOTE_PROTOCOL_VERSION = 1;
export const KEEPALIVE_PROGRAM = 0x6b656570;
export const KEEPALIVE_PROTOCOL_VERSION = 1;
export const KEEPALIVE_PROC_PING = 1;
export const KEEPALIVE_PROC_PONG = 2;

// -------------------- Framing (virnetprotocol.x)

export const VIR_NET_MESSAGE_INITIAL = 65536;
export const VIR_NET_MESSAGE_LEGACY_PAYLOAD_MAX = 262120;
export const VIR_NET_MESSAGE_MAX = 33554432;
export const VIR_NET_MESSAGE_HEADER_MAX = 24;
export const VIR_NET_MESSAGE_PAYLOAD_MAX = 33554408;
export const VIR_NET_MESSAGE_LEN_MAX = 4;
export const VIR_NET_MESSAGE_STRING_MAX = 4194304;
export const VIR_NET_MESSAGE_NUM_FDS_MAX = 32;
export const VIR_NET_MESSAGE_HEADER_XDR_LEN = 4;

/** virNetMessageType */
export const MessageType = {
  VIR_NET_CALL: 0,
  VIR_NET_REPLY: 1,
  VIR_NET_MESSAGE: 2,
  VIR_NET_STREAM: 3,
  VIR_NET_CALL_WITH_FDS: 4,
  VIR_NET_REPLY_WITH_FDS: 5,
  VIR_NET_STREAM_HOLE: 6,
} as const;

/** virNetMessageStatus */
export const MessageStatus = {
  VIR_NET_OK: 0,
  VIR_NET_ERROR: 1,
  VIR_NET_CONTINUE: 2,
} as const;

// -------------------- Limits used by the types below (remote_protocol.x)

export const REMOTE_STRING_MAX = 4194304;
export const REMOTE_DOMAIN_LIST_MAX = 16384;
export const REMOTE_NETWORK_LIST_MAX = 16384;
export const REMOTE_STORAGE_POOL_LIST_MAX = 16384;
export const REMOTE_STORAGE_VOL_LIST_MAX = 16384;
export const REMOTE_AUTH_TYPE_LIST_MAX = 20;
export const REMOTE_DOMAIN_INTERFACE_MAX = 2048;
export const REMOTE_DOMAIN_IP_ADDR_MAX = 2048;

// -------------------- Enums (remote_protocol.x)

/** remote_auth_type */
export const AuthType = {
  REMOTE_AUTH_NONE: 0,
  REMOTE_AUTH_SASL: 1,
  REMOTE_AUTH_POLKIT: 2,
} as const;

// -------------------- Types and their codecs (remote_protocol.x)

/** remote_nonnull_domain */
export interface NonnullDomain {
  name: string; // remote_nonnull_string name
  uuid: Buffer; // remote_uuid uuid
  id: number; // int id
}

export function encodeNonnullDomain(w: XdrWriter, v: NonnullDomain): void {
  w.string(v.name, 4194304);
  w.fixedOpaque(v.uuid, 16);
  w.int(v.id);
}

export function decodeNonnullDomain(r: XdrReader): NonnullDomain {
  return {
    name: r.string(4194304),
    uuid: r.fixedOpaque(16),
    id: r.int(),
  };
}

/** remote_nonnull_network */
export interface NonnullNetwork {
  name: string; // remote_nonnull_string name
  uuid: Buffer; // remote_uuid uuid
}

export function encodeNonnullNetwork(w: XdrWriter, v: NonnullNetwork): void {
  w.string(v.name, 4194304);
  w.fixedOpaque(v.uuid, 16);
}

export function decodeNonnullNetwork(r: XdrReader): NonnullNetwork {
  return {
    name: r.string(4194304),
    uuid: r.fixedOpaque(16),
  };
}

/** remote_nonnull_storage_pool */
export interface NonnullStoragePool {
  name: string; // remote_nonnull_string name
  uuid: Buffer; // remote_uuid uuid
}

export function encodeNonnullStoragePool(w: XdrWriter, v: NonnullStoragePool): void {
  w.string(v.name, 4194304);
  w.fixedOpaque(v.uuid, 16);
}

export function decodeNonnullStoragePool(r: XdrReader): NonnullStoragePool {
  return {
    name: r.string(4194304),
    uuid: r.fixedOpaque(16),
  };
}

/** remote_nonnull_storage_vol */
export interface NonnullStorageVol {
  pool: string; // remote_nonnull_string pool
  name: string; // remote_nonnull_string name
  key: string; // remote_nonnull_string key
}

export function encodeNonnullStorageVol(w: XdrWriter, v: NonnullStorageVol): void {
  w.string(v.pool, 4194304);
  w.string(v.name, 4194304);
  w.string(v.key, 4194304);
}

export function decodeNonnullStorageVol(r: XdrReader): NonnullStorageVol {
  return {
    pool: r.string(4194304),
    name: r.string(4194304),
    key: r.string(4194304),
  };
}

/** remote_error */
export interface RemoteError {
  code: number; // int code
  domain: number; // int domain
  message: string | null; // remote_string message
  level: number; // int level
  dom: NonnullDomain | null; // remote_domain dom
  str1: string | null; // remote_string str1
  str2: string | null; // remote_string str2
  str3: string | null; // remote_string str3
  int1: number; // int int1
  int2: number; // int int2
  net: NonnullNetwork | null; // remote_network net
}

export function encodeRemoteError(w: XdrWriter, v: RemoteError): void {
  w.int(v.code);
  w.int(v.domain);
  if (v.message === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.message, 4194304);
  }
  w.int(v.level);
  if (v.dom === null) {
    w.uint(0);
  } else {
    w.uint(1);
    encodeNonnullDomain(w, v.dom);
  }
  if (v.str1 === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.str1, 4194304);
  }
  if (v.str2 === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.str2, 4194304);
  }
  if (v.str3 === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.str3, 4194304);
  }
  w.int(v.int1);
  w.int(v.int2);
  if (v.net === null) {
    w.uint(0);
  } else {
    w.uint(1);
    encodeNonnullNetwork(w, v.net);
  }
}

export function decodeRemoteError(r: XdrReader): RemoteError {
  return {
    code: r.int(),
    domain: r.int(),
    message: r.bool() ? r.string(4194304) : null,
    level: r.int(),
    dom: r.bool() ? decodeNonnullDomain(r) : null,
    str1: r.bool() ? r.string(4194304) : null,
    str2: r.bool() ? r.string(4194304) : null,
    str3: r.bool() ? r.string(4194304) : null,
    int1: r.int(),
    int2: r.int(),
    net: r.bool() ? decodeNonnullNetwork(r) : null,
  };
}

/** remote_connect_open_args */
export interface ConnectOpenArgs {
  name: string | null; // remote_string name
  flags: number; // unsigned int flags
}

export function encodeConnectOpenArgs(w: XdrWriter, v: ConnectOpenArgs): void {
  if (v.name === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.name, 4194304);
  }
  w.uint(v.flags);
}

export function decodeConnectOpenArgs(r: XdrReader): ConnectOpenArgs {
  return {
    name: r.bool() ? r.string(4194304) : null,
    flags: r.uint(),
  };
}

/** remote_connect_supports_feature_args */
export interface ConnectSupportsFeatureArgs {
  feature: number; // int feature
}

export function encodeConnectSupportsFeatureArgs(w: XdrWriter, v: ConnectSupportsFeatureArgs): void {
  w.int(v.feature);
}

export function decodeConnectSupportsFeatureArgs(r: XdrReader): ConnectSupportsFeatureArgs {
  return {
    feature: r.int(),
  };
}

/** remote_connect_supports_feature_ret */
export interface ConnectSupportsFeatureRet {
  supported: number; // int supported
}

export function encodeConnectSupportsFeatureRet(w: XdrWriter, v: ConnectSupportsFeatureRet): void {
  w.int(v.supported);
}

export function decodeConnectSupportsFeatureRet(r: XdrReader): ConnectSupportsFeatureRet {
  return {
    supported: r.int(),
  };
}

/** remote_connect_get_type_ret */
export interface ConnectGetTypeRet {
  type: string; // remote_nonnull_string type
}

export function encodeConnectGetTypeRet(w: XdrWriter, v: ConnectGetTypeRet): void {
  w.string(v.type, 4194304);
}

export function decodeConnectGetTypeRet(r: XdrReader): ConnectGetTypeRet {
  return {
    type: r.string(4194304),
  };
}

/** remote_connect_get_version_ret */
export interface ConnectGetVersionRet {
  hvVer: bigint; // unsigned hyper hv_ver
}

export function encodeConnectGetVersionRet(w: XdrWriter, v: ConnectGetVersionRet): void {
  w.uhyper(v.hvVer);
}

export function decodeConnectGetVersionRet(r: XdrReader): ConnectGetVersionRet {
  return {
    hvVer: r.uhyper(),
  };
}

/** remote_connect_get_lib_version_ret */
export interface ConnectGetLibVersionRet {
  libVer: bigint; // unsigned hyper lib_ver
}

export function encodeConnectGetLibVersionRet(w: XdrWriter, v: ConnectGetLibVersionRet): void {
  w.uhyper(v.libVer);
}

export function decodeConnectGetLibVersionRet(r: XdrReader): ConnectGetLibVersionRet {
  return {
    libVer: r.uhyper(),
  };
}

/** remote_connect_get_hostname_ret */
export interface ConnectGetHostnameRet {
  hostname: string; // remote_nonnull_string hostname
}

export function encodeConnectGetHostnameRet(w: XdrWriter, v: ConnectGetHostnameRet): void {
  w.string(v.hostname, 4194304);
}

export function decodeConnectGetHostnameRet(r: XdrReader): ConnectGetHostnameRet {
  return {
    hostname: r.string(4194304),
  };
}

/** remote_connect_get_uri_ret */
export interface ConnectGetURIRet {
  uri: string; // remote_nonnull_string uri
}

export function encodeConnectGetURIRet(w: XdrWriter, v: ConnectGetURIRet): void {
  w.string(v.uri, 4194304);
}

export function decodeConnectGetURIRet(r: XdrReader): ConnectGetURIRet {
  return {
    uri: r.string(4194304),
  };
}

/** remote_node_get_info_ret */
export interface NodeGetInfoRet {
  model: number[]; // char model[32]
  memory: bigint; // unsigned hyper memory
  cpus: number; // int cpus
  mhz: number; // int mhz
  nodes: number; // int nodes
  sockets: number; // int sockets
  cores: number; // int cores
  threads: number; // int threads
}

export function encodeNodeGetInfoRet(w: XdrWriter, v: NodeGetInfoRet): void {
  if (v.model.length !== 32) {
    throw new RangeError(`NodeGetInfoRet.model must have 32 items, got ${v.model.length}`);
  }
  for (const item of v.model) w.int(item);
  w.uhyper(v.memory);
  w.int(v.cpus);
  w.int(v.mhz);
  w.int(v.nodes);
  w.int(v.sockets);
  w.int(v.cores);
  w.int(v.threads);
}

export function decodeNodeGetInfoRet(r: XdrReader): NodeGetInfoRet {
  const model: number[] = [];
  for (let i = 0; i < 32; i++) model.push(r.int());
  const memory = r.uhyper();
  const cpus = r.int();
  const mhz = r.int();
  const nodes = r.int();
  const sockets = r.int();
  const cores = r.int();
  const threads = r.int();
  return { model, memory, cpus, mhz, nodes, sockets, cores, threads };
}

/** remote_connect_get_capabilities_ret */
export interface ConnectGetCapabilitiesRet {
  capabilities: string; // remote_nonnull_string capabilities
}

export function encodeConnectGetCapabilitiesRet(w: XdrWriter, v: ConnectGetCapabilitiesRet): void {
  w.string(v.capabilities, 4194304);
}

export function decodeConnectGetCapabilitiesRet(r: XdrReader): ConnectGetCapabilitiesRet {
  return {
    capabilities: r.string(4194304),
  };
}

/** remote_domain_lookup_by_uuid_args */
export interface DomainLookupByUUIDArgs {
  uuid: Buffer; // remote_uuid uuid
}

export function encodeDomainLookupByUUIDArgs(w: XdrWriter, v: DomainLookupByUUIDArgs): void {
  w.fixedOpaque(v.uuid, 16);
}

export function decodeDomainLookupByUUIDArgs(r: XdrReader): DomainLookupByUUIDArgs {
  return {
    uuid: r.fixedOpaque(16),
  };
}

/** remote_domain_lookup_by_uuid_ret */
export interface DomainLookupByUUIDRet {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainLookupByUUIDRet(w: XdrWriter, v: DomainLookupByUUIDRet): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainLookupByUUIDRet(r: XdrReader): DomainLookupByUUIDRet {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_lookup_by_name_args */
export interface DomainLookupByNameArgs {
  name: string; // remote_nonnull_string name
}

export function encodeDomainLookupByNameArgs(w: XdrWriter, v: DomainLookupByNameArgs): void {
  w.string(v.name, 4194304);
}

export function decodeDomainLookupByNameArgs(r: XdrReader): DomainLookupByNameArgs {
  return {
    name: r.string(4194304),
  };
}

/** remote_domain_lookup_by_name_ret */
export interface DomainLookupByNameRet {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainLookupByNameRet(w: XdrWriter, v: DomainLookupByNameRet): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainLookupByNameRet(r: XdrReader): DomainLookupByNameRet {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_destroy_args */
export interface DomainDestroyArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainDestroyArgs(w: XdrWriter, v: DomainDestroyArgs): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainDestroyArgs(r: XdrReader): DomainDestroyArgs {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_destroy_flags_args */
export interface DomainDestroyFlagsArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  flags: number; // unsigned int flags
}

export function encodeDomainDestroyFlagsArgs(w: XdrWriter, v: DomainDestroyFlagsArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.uint(v.flags);
}

export function decodeDomainDestroyFlagsArgs(r: XdrReader): DomainDestroyFlagsArgs {
  return {
    dom: decodeNonnullDomain(r),
    flags: r.uint(),
  };
}

/** remote_domain_get_info_args */
export interface DomainGetInfoArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainGetInfoArgs(w: XdrWriter, v: DomainGetInfoArgs): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainGetInfoArgs(r: XdrReader): DomainGetInfoArgs {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_get_info_ret */
export interface DomainGetInfoRet {
  state: number; // unsigned char state
  maxMem: bigint; // unsigned hyper maxMem
  memory: bigint; // unsigned hyper memory
  nrVirtCpu: number; // unsigned short nrVirtCpu
  cpuTime: bigint; // unsigned hyper cpuTime
}

export function encodeDomainGetInfoRet(w: XdrWriter, v: DomainGetInfoRet): void {
  w.uint(v.state);
  w.uhyper(v.maxMem);
  w.uhyper(v.memory);
  w.uint(v.nrVirtCpu);
  w.uhyper(v.cpuTime);
}

export function decodeDomainGetInfoRet(r: XdrReader): DomainGetInfoRet {
  return {
    state: r.uint(),
    maxMem: r.uhyper(),
    memory: r.uhyper(),
    nrVirtCpu: r.uint(),
    cpuTime: r.uhyper(),
  };
}

/** remote_domain_get_xml_desc_args */
export interface DomainGetXMLDescArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  flags: number; // unsigned int flags
}

export function encodeDomainGetXMLDescArgs(w: XdrWriter, v: DomainGetXMLDescArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.uint(v.flags);
}

export function decodeDomainGetXMLDescArgs(r: XdrReader): DomainGetXMLDescArgs {
  return {
    dom: decodeNonnullDomain(r),
    flags: r.uint(),
  };
}

/** remote_domain_get_xml_desc_ret */
export interface DomainGetXMLDescRet {
  xml: string; // remote_nonnull_string xml
}

export function encodeDomainGetXMLDescRet(w: XdrWriter, v: DomainGetXMLDescRet): void {
  w.string(v.xml, 4194304);
}

export function decodeDomainGetXMLDescRet(r: XdrReader): DomainGetXMLDescRet {
  return {
    xml: r.string(4194304),
  };
}

/** remote_domain_create_args */
export interface DomainCreateArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainCreateArgs(w: XdrWriter, v: DomainCreateArgs): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainCreateArgs(r: XdrReader): DomainCreateArgs {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_create_with_flags_args */
export interface DomainCreateWithFlagsArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  flags: number; // unsigned int flags
}

export function encodeDomainCreateWithFlagsArgs(w: XdrWriter, v: DomainCreateWithFlagsArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.uint(v.flags);
}

export function decodeDomainCreateWithFlagsArgs(r: XdrReader): DomainCreateWithFlagsArgs {
  return {
    dom: decodeNonnullDomain(r),
    flags: r.uint(),
  };
}

/** remote_domain_create_with_flags_ret */
export interface DomainCreateWithFlagsRet {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainCreateWithFlagsRet(w: XdrWriter, v: DomainCreateWithFlagsRet): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainCreateWithFlagsRet(r: XdrReader): DomainCreateWithFlagsRet {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_define_xml_args */
export interface DomainDefineXMLArgs {
  xml: string; // remote_nonnull_string xml
}

export function encodeDomainDefineXMLArgs(w: XdrWriter, v: DomainDefineXMLArgs): void {
  w.string(v.xml, 4194304);
}

export function decodeDomainDefineXMLArgs(r: XdrReader): DomainDefineXMLArgs {
  return {
    xml: r.string(4194304),
  };
}

/** remote_domain_define_xml_ret */
export interface DomainDefineXMLRet {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainDefineXMLRet(w: XdrWriter, v: DomainDefineXMLRet): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainDefineXMLRet(r: XdrReader): DomainDefineXMLRet {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_define_xml_flags_args */
export interface DomainDefineXMLFlagsArgs {
  xml: string; // remote_nonnull_string xml
  flags: number; // unsigned int flags
}

export function encodeDomainDefineXMLFlagsArgs(w: XdrWriter, v: DomainDefineXMLFlagsArgs): void {
  w.string(v.xml, 4194304);
  w.uint(v.flags);
}

export function decodeDomainDefineXMLFlagsArgs(r: XdrReader): DomainDefineXMLFlagsArgs {
  return {
    xml: r.string(4194304),
    flags: r.uint(),
  };
}

/** remote_domain_define_xml_flags_ret */
export interface DomainDefineXMLFlagsRet {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainDefineXMLFlagsRet(w: XdrWriter, v: DomainDefineXMLFlagsRet): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainDefineXMLFlagsRet(r: XdrReader): DomainDefineXMLFlagsRet {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_undefine_args */
export interface DomainUndefineArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainUndefineArgs(w: XdrWriter, v: DomainUndefineArgs): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainUndefineArgs(r: XdrReader): DomainUndefineArgs {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_undefine_flags_args */
export interface DomainUndefineFlagsArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  flags: number; // unsigned int flags
}

export function encodeDomainUndefineFlagsArgs(w: XdrWriter, v: DomainUndefineFlagsArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.uint(v.flags);
}

export function decodeDomainUndefineFlagsArgs(r: XdrReader): DomainUndefineFlagsArgs {
  return {
    dom: decodeNonnullDomain(r),
    flags: r.uint(),
  };
}

/** remote_domain_get_autostart_args */
export interface DomainGetAutostartArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainGetAutostartArgs(w: XdrWriter, v: DomainGetAutostartArgs): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainGetAutostartArgs(r: XdrReader): DomainGetAutostartArgs {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_get_autostart_ret */
export interface DomainGetAutostartRet {
  autostart: number; // int autostart
}

export function encodeDomainGetAutostartRet(w: XdrWriter, v: DomainGetAutostartRet): void {
  w.int(v.autostart);
}

export function decodeDomainGetAutostartRet(r: XdrReader): DomainGetAutostartRet {
  return {
    autostart: r.int(),
  };
}

/** remote_domain_set_autostart_args */
export interface DomainSetAutostartArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  autostart: number; // int autostart
}

export function encodeDomainSetAutostartArgs(w: XdrWriter, v: DomainSetAutostartArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.int(v.autostart);
}

export function decodeDomainSetAutostartArgs(r: XdrReader): DomainSetAutostartArgs {
  return {
    dom: decodeNonnullDomain(r),
    autostart: r.int(),
  };
}

/** remote_domain_set_metadata_args */
export interface DomainSetMetadataArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  type: number; // int type
  metadata: string | null; // remote_string metadata
  key: string | null; // remote_string key
  uri: string | null; // remote_string uri
  flags: number; // unsigned int flags
}

export function encodeDomainSetMetadataArgs(w: XdrWriter, v: DomainSetMetadataArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.int(v.type);
  if (v.metadata === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.metadata, 4194304);
  }
  if (v.key === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.key, 4194304);
  }
  if (v.uri === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.uri, 4194304);
  }
  w.uint(v.flags);
}

export function decodeDomainSetMetadataArgs(r: XdrReader): DomainSetMetadataArgs {
  return {
    dom: decodeNonnullDomain(r),
    type: r.int(),
    metadata: r.bool() ? r.string(4194304) : null,
    key: r.bool() ? r.string(4194304) : null,
    uri: r.bool() ? r.string(4194304) : null,
    flags: r.uint(),
  };
}

/** remote_domain_get_metadata_args */
export interface DomainGetMetadataArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  type: number; // int type
  uri: string | null; // remote_string uri
  flags: number; // unsigned int flags
}

export function encodeDomainGetMetadataArgs(w: XdrWriter, v: DomainGetMetadataArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.int(v.type);
  if (v.uri === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.uri, 4194304);
  }
  w.uint(v.flags);
}

export function decodeDomainGetMetadataArgs(r: XdrReader): DomainGetMetadataArgs {
  return {
    dom: decodeNonnullDomain(r),
    type: r.int(),
    uri: r.bool() ? r.string(4194304) : null,
    flags: r.uint(),
  };
}

/** remote_domain_get_metadata_ret */
export interface DomainGetMetadataRet {
  metadata: string; // remote_nonnull_string metadata
}

export function encodeDomainGetMetadataRet(w: XdrWriter, v: DomainGetMetadataRet): void {
  w.string(v.metadata, 4194304);
}

export function decodeDomainGetMetadataRet(r: XdrReader): DomainGetMetadataRet {
  return {
    metadata: r.string(4194304),
  };
}

/** remote_network_lookup_by_name_args */
export interface NetworkLookupByNameArgs {
  name: string; // remote_nonnull_string name
}

export function encodeNetworkLookupByNameArgs(w: XdrWriter, v: NetworkLookupByNameArgs): void {
  w.string(v.name, 4194304);
}

export function decodeNetworkLookupByNameArgs(r: XdrReader): NetworkLookupByNameArgs {
  return {
    name: r.string(4194304),
  };
}

/** remote_network_lookup_by_name_ret */
export interface NetworkLookupByNameRet {
  net: NonnullNetwork; // remote_nonnull_network net
}

export function encodeNetworkLookupByNameRet(w: XdrWriter, v: NetworkLookupByNameRet): void {
  encodeNonnullNetwork(w, v.net);
}

export function decodeNetworkLookupByNameRet(r: XdrReader): NetworkLookupByNameRet {
  return {
    net: decodeNonnullNetwork(r),
  };
}

/** remote_network_get_xml_desc_args */
export interface NetworkGetXMLDescArgs {
  net: NonnullNetwork; // remote_nonnull_network net
  flags: number; // unsigned int flags
}

export function encodeNetworkGetXMLDescArgs(w: XdrWriter, v: NetworkGetXMLDescArgs): void {
  encodeNonnullNetwork(w, v.net);
  w.uint(v.flags);
}

export function decodeNetworkGetXMLDescArgs(r: XdrReader): NetworkGetXMLDescArgs {
  return {
    net: decodeNonnullNetwork(r),
    flags: r.uint(),
  };
}

/** remote_network_get_xml_desc_ret */
export interface NetworkGetXMLDescRet {
  xml: string; // remote_nonnull_string xml
}

export function encodeNetworkGetXMLDescRet(w: XdrWriter, v: NetworkGetXMLDescRet): void {
  w.string(v.xml, 4194304);
}

export function decodeNetworkGetXMLDescRet(r: XdrReader): NetworkGetXMLDescRet {
  return {
    xml: r.string(4194304),
  };
}

/** remote_auth_list_ret */
export interface AuthListRet {
  types: number[]; // remote_auth_type types<REMOTE_AUTH_TYPE_LIST_MAX>
}

export function encodeAuthListRet(w: XdrWriter, v: AuthListRet): void {
  w.count(v.types.length, 20);
  for (const item of v.types) w.int(item);
}

export function decodeAuthListRet(r: XdrReader): AuthListRet {
  const types: number[] = [];
  for (let i = 0, n = r.count(20, 4); i < n; i++) types.push(r.int());
  return { types };
}

/** remote_auth_polkit_ret */
export interface AuthPolkitRet {
  complete: number; // int complete
}

export function encodeAuthPolkitRet(w: XdrWriter, v: AuthPolkitRet): void {
  w.int(v.complete);
}

export function decodeAuthPolkitRet(r: XdrReader): AuthPolkitRet {
  return {
    complete: r.int(),
  };
}

/** remote_storage_pool_lookup_by_uuid_args */
export interface StoragePoolLookupByUUIDArgs {
  uuid: Buffer; // remote_uuid uuid
}

export function encodeStoragePoolLookupByUUIDArgs(w: XdrWriter, v: StoragePoolLookupByUUIDArgs): void {
  w.fixedOpaque(v.uuid, 16);
}

export function decodeStoragePoolLookupByUUIDArgs(r: XdrReader): StoragePoolLookupByUUIDArgs {
  return {
    uuid: r.fixedOpaque(16),
  };
}

/** remote_storage_pool_lookup_by_uuid_ret */
export interface StoragePoolLookupByUUIDRet {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
}

export function encodeStoragePoolLookupByUUIDRet(w: XdrWriter, v: StoragePoolLookupByUUIDRet): void {
  encodeNonnullStoragePool(w, v.pool);
}

export function decodeStoragePoolLookupByUUIDRet(r: XdrReader): StoragePoolLookupByUUIDRet {
  return {
    pool: decodeNonnullStoragePool(r),
  };
}

/** remote_storage_pool_lookup_by_name_args */
export interface StoragePoolLookupByNameArgs {
  name: string; // remote_nonnull_string name
}

export function encodeStoragePoolLookupByNameArgs(w: XdrWriter, v: StoragePoolLookupByNameArgs): void {
  w.string(v.name, 4194304);
}

export function decodeStoragePoolLookupByNameArgs(r: XdrReader): StoragePoolLookupByNameArgs {
  return {
    name: r.string(4194304),
  };
}

/** remote_storage_pool_lookup_by_name_ret */
export interface StoragePoolLookupByNameRet {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
}

export function encodeStoragePoolLookupByNameRet(w: XdrWriter, v: StoragePoolLookupByNameRet): void {
  encodeNonnullStoragePool(w, v.pool);
}

export function decodeStoragePoolLookupByNameRet(r: XdrReader): StoragePoolLookupByNameRet {
  return {
    pool: decodeNonnullStoragePool(r),
  };
}

/** remote_storage_pool_lookup_by_volume_args */
export interface StoragePoolLookupByVolumeArgs {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
}

export function encodeStoragePoolLookupByVolumeArgs(w: XdrWriter, v: StoragePoolLookupByVolumeArgs): void {
  encodeNonnullStorageVol(w, v.vol);
}

export function decodeStoragePoolLookupByVolumeArgs(r: XdrReader): StoragePoolLookupByVolumeArgs {
  return {
    vol: decodeNonnullStorageVol(r),
  };
}

/** remote_storage_pool_lookup_by_volume_ret */
export interface StoragePoolLookupByVolumeRet {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
}

export function encodeStoragePoolLookupByVolumeRet(w: XdrWriter, v: StoragePoolLookupByVolumeRet): void {
  encodeNonnullStoragePool(w, v.pool);
}

export function decodeStoragePoolLookupByVolumeRet(r: XdrReader): StoragePoolLookupByVolumeRet {
  return {
    pool: decodeNonnullStoragePool(r),
  };
}

/** remote_storage_pool_define_xml_args */
export interface StoragePoolDefineXMLArgs {
  xml: string; // remote_nonnull_string xml
  flags: number; // unsigned int flags
}

export function encodeStoragePoolDefineXMLArgs(w: XdrWriter, v: StoragePoolDefineXMLArgs): void {
  w.string(v.xml, 4194304);
  w.uint(v.flags);
}

export function decodeStoragePoolDefineXMLArgs(r: XdrReader): StoragePoolDefineXMLArgs {
  return {
    xml: r.string(4194304),
    flags: r.uint(),
  };
}

/** remote_storage_pool_define_xml_ret */
export interface StoragePoolDefineXMLRet {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
}

export function encodeStoragePoolDefineXMLRet(w: XdrWriter, v: StoragePoolDefineXMLRet): void {
  encodeNonnullStoragePool(w, v.pool);
}

export function decodeStoragePoolDefineXMLRet(r: XdrReader): StoragePoolDefineXMLRet {
  return {
    pool: decodeNonnullStoragePool(r),
  };
}

/** remote_storage_pool_undefine_args */
export interface StoragePoolUndefineArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
}

export function encodeStoragePoolUndefineArgs(w: XdrWriter, v: StoragePoolUndefineArgs): void {
  encodeNonnullStoragePool(w, v.pool);
}

export function decodeStoragePoolUndefineArgs(r: XdrReader): StoragePoolUndefineArgs {
  return {
    pool: decodeNonnullStoragePool(r),
  };
}

/** remote_storage_pool_create_args */
export interface StoragePoolCreateArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
  flags: number; // unsigned int flags
}

export function encodeStoragePoolCreateArgs(w: XdrWriter, v: StoragePoolCreateArgs): void {
  encodeNonnullStoragePool(w, v.pool);
  w.uint(v.flags);
}

export function decodeStoragePoolCreateArgs(r: XdrReader): StoragePoolCreateArgs {
  return {
    pool: decodeNonnullStoragePool(r),
    flags: r.uint(),
  };
}

/** remote_storage_pool_destroy_args */
export interface StoragePoolDestroyArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
}

export function encodeStoragePoolDestroyArgs(w: XdrWriter, v: StoragePoolDestroyArgs): void {
  encodeNonnullStoragePool(w, v.pool);
}

export function decodeStoragePoolDestroyArgs(r: XdrReader): StoragePoolDestroyArgs {
  return {
    pool: decodeNonnullStoragePool(r),
  };
}

/** remote_storage_pool_refresh_args */
export interface StoragePoolRefreshArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
  flags: number; // unsigned int flags
}

export function encodeStoragePoolRefreshArgs(w: XdrWriter, v: StoragePoolRefreshArgs): void {
  encodeNonnullStoragePool(w, v.pool);
  w.uint(v.flags);
}

export function decodeStoragePoolRefreshArgs(r: XdrReader): StoragePoolRefreshArgs {
  return {
    pool: decodeNonnullStoragePool(r),
    flags: r.uint(),
  };
}

/** remote_storage_pool_get_xml_desc_args */
export interface StoragePoolGetXMLDescArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
  flags: number; // unsigned int flags
}

export function encodeStoragePoolGetXMLDescArgs(w: XdrWriter, v: StoragePoolGetXMLDescArgs): void {
  encodeNonnullStoragePool(w, v.pool);
  w.uint(v.flags);
}

export function decodeStoragePoolGetXMLDescArgs(r: XdrReader): StoragePoolGetXMLDescArgs {
  return {
    pool: decodeNonnullStoragePool(r),
    flags: r.uint(),
  };
}

/** remote_storage_pool_get_xml_desc_ret */
export interface StoragePoolGetXMLDescRet {
  xml: string; // remote_nonnull_string xml
}

export function encodeStoragePoolGetXMLDescRet(w: XdrWriter, v: StoragePoolGetXMLDescRet): void {
  w.string(v.xml, 4194304);
}

export function decodeStoragePoolGetXMLDescRet(r: XdrReader): StoragePoolGetXMLDescRet {
  return {
    xml: r.string(4194304),
  };
}

/** remote_storage_pool_get_info_args */
export interface StoragePoolGetInfoArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
}

export function encodeStoragePoolGetInfoArgs(w: XdrWriter, v: StoragePoolGetInfoArgs): void {
  encodeNonnullStoragePool(w, v.pool);
}

export function decodeStoragePoolGetInfoArgs(r: XdrReader): StoragePoolGetInfoArgs {
  return {
    pool: decodeNonnullStoragePool(r),
  };
}

/** remote_storage_pool_get_info_ret */
export interface StoragePoolGetInfoRet {
  state: number; // unsigned char state
  capacity: bigint; // unsigned hyper capacity
  allocation: bigint; // unsigned hyper allocation
  available: bigint; // unsigned hyper available
}

export function encodeStoragePoolGetInfoRet(w: XdrWriter, v: StoragePoolGetInfoRet): void {
  w.uint(v.state);
  w.uhyper(v.capacity);
  w.uhyper(v.allocation);
  w.uhyper(v.available);
}

export function decodeStoragePoolGetInfoRet(r: XdrReader): StoragePoolGetInfoRet {
  return {
    state: r.uint(),
    capacity: r.uhyper(),
    allocation: r.uhyper(),
    available: r.uhyper(),
  };
}

/** remote_storage_vol_lookup_by_name_args */
export interface StorageVolLookupByNameArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
  name: string; // remote_nonnull_string name
}

export function encodeStorageVolLookupByNameArgs(w: XdrWriter, v: StorageVolLookupByNameArgs): void {
  encodeNonnullStoragePool(w, v.pool);
  w.string(v.name, 4194304);
}

export function decodeStorageVolLookupByNameArgs(r: XdrReader): StorageVolLookupByNameArgs {
  return {
    pool: decodeNonnullStoragePool(r),
    name: r.string(4194304),
  };
}

/** remote_storage_vol_lookup_by_name_ret */
export interface StorageVolLookupByNameRet {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
}

export function encodeStorageVolLookupByNameRet(w: XdrWriter, v: StorageVolLookupByNameRet): void {
  encodeNonnullStorageVol(w, v.vol);
}

export function decodeStorageVolLookupByNameRet(r: XdrReader): StorageVolLookupByNameRet {
  return {
    vol: decodeNonnullStorageVol(r),
  };
}

/** remote_storage_vol_create_xml_args */
export interface StorageVolCreateXMLArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
  xml: string; // remote_nonnull_string xml
  flags: number; // unsigned int flags
}

export function encodeStorageVolCreateXMLArgs(w: XdrWriter, v: StorageVolCreateXMLArgs): void {
  encodeNonnullStoragePool(w, v.pool);
  w.string(v.xml, 4194304);
  w.uint(v.flags);
}

export function decodeStorageVolCreateXMLArgs(r: XdrReader): StorageVolCreateXMLArgs {
  return {
    pool: decodeNonnullStoragePool(r),
    xml: r.string(4194304),
    flags: r.uint(),
  };
}

/** remote_storage_vol_create_xml_ret */
export interface StorageVolCreateXMLRet {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
}

export function encodeStorageVolCreateXMLRet(w: XdrWriter, v: StorageVolCreateXMLRet): void {
  encodeNonnullStorageVol(w, v.vol);
}

export function decodeStorageVolCreateXMLRet(r: XdrReader): StorageVolCreateXMLRet {
  return {
    vol: decodeNonnullStorageVol(r),
  };
}

/** remote_storage_vol_create_xml_from_args */
export interface StorageVolCreateXMLFromArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
  xml: string; // remote_nonnull_string xml
  clonevol: NonnullStorageVol; // remote_nonnull_storage_vol clonevol
  flags: number; // unsigned int flags
}

export function encodeStorageVolCreateXMLFromArgs(w: XdrWriter, v: StorageVolCreateXMLFromArgs): void {
  encodeNonnullStoragePool(w, v.pool);
  w.string(v.xml, 4194304);
  encodeNonnullStorageVol(w, v.clonevol);
  w.uint(v.flags);
}

export function decodeStorageVolCreateXMLFromArgs(r: XdrReader): StorageVolCreateXMLFromArgs {
  return {
    pool: decodeNonnullStoragePool(r),
    xml: r.string(4194304),
    clonevol: decodeNonnullStorageVol(r),
    flags: r.uint(),
  };
}

/** remote_storage_vol_create_xml_from_ret */
export interface StorageVolCreateXMLFromRet {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
}

export function encodeStorageVolCreateXMLFromRet(w: XdrWriter, v: StorageVolCreateXMLFromRet): void {
  encodeNonnullStorageVol(w, v.vol);
}

export function decodeStorageVolCreateXMLFromRet(r: XdrReader): StorageVolCreateXMLFromRet {
  return {
    vol: decodeNonnullStorageVol(r),
  };
}

/** remote_storage_vol_delete_args */
export interface StorageVolDeleteArgs {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
  flags: number; // unsigned int flags
}

export function encodeStorageVolDeleteArgs(w: XdrWriter, v: StorageVolDeleteArgs): void {
  encodeNonnullStorageVol(w, v.vol);
  w.uint(v.flags);
}

export function decodeStorageVolDeleteArgs(r: XdrReader): StorageVolDeleteArgs {
  return {
    vol: decodeNonnullStorageVol(r),
    flags: r.uint(),
  };
}

/** remote_storage_vol_get_xml_desc_args */
export interface StorageVolGetXMLDescArgs {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
  flags: number; // unsigned int flags
}

export function encodeStorageVolGetXMLDescArgs(w: XdrWriter, v: StorageVolGetXMLDescArgs): void {
  encodeNonnullStorageVol(w, v.vol);
  w.uint(v.flags);
}

export function decodeStorageVolGetXMLDescArgs(r: XdrReader): StorageVolGetXMLDescArgs {
  return {
    vol: decodeNonnullStorageVol(r),
    flags: r.uint(),
  };
}

/** remote_storage_vol_get_xml_desc_ret */
export interface StorageVolGetXMLDescRet {
  xml: string; // remote_nonnull_string xml
}

export function encodeStorageVolGetXMLDescRet(w: XdrWriter, v: StorageVolGetXMLDescRet): void {
  w.string(v.xml, 4194304);
}

export function decodeStorageVolGetXMLDescRet(r: XdrReader): StorageVolGetXMLDescRet {
  return {
    xml: r.string(4194304),
  };
}

/** remote_storage_vol_get_info_args */
export interface StorageVolGetInfoArgs {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
}

export function encodeStorageVolGetInfoArgs(w: XdrWriter, v: StorageVolGetInfoArgs): void {
  encodeNonnullStorageVol(w, v.vol);
}

export function decodeStorageVolGetInfoArgs(r: XdrReader): StorageVolGetInfoArgs {
  return {
    vol: decodeNonnullStorageVol(r),
  };
}

/** remote_storage_vol_get_info_ret */
export interface StorageVolGetInfoRet {
  type: number; // char type
  capacity: bigint; // unsigned hyper capacity
  allocation: bigint; // unsigned hyper allocation
}

export function encodeStorageVolGetInfoRet(w: XdrWriter, v: StorageVolGetInfoRet): void {
  w.int(v.type);
  w.uhyper(v.capacity);
  w.uhyper(v.allocation);
}

export function decodeStorageVolGetInfoRet(r: XdrReader): StorageVolGetInfoRet {
  return {
    type: r.int(),
    capacity: r.uhyper(),
    allocation: r.uhyper(),
  };
}

/** remote_storage_vol_get_path_args */
export interface StorageVolGetPathArgs {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
}

export function encodeStorageVolGetPathArgs(w: XdrWriter, v: StorageVolGetPathArgs): void {
  encodeNonnullStorageVol(w, v.vol);
}

export function decodeStorageVolGetPathArgs(r: XdrReader): StorageVolGetPathArgs {
  return {
    vol: decodeNonnullStorageVol(r),
  };
}

/** remote_storage_vol_get_path_ret */
export interface StorageVolGetPathRet {
  name: string; // remote_nonnull_string name
}

export function encodeStorageVolGetPathRet(w: XdrWriter, v: StorageVolGetPathRet): void {
  w.string(v.name, 4194304);
}

export function decodeStorageVolGetPathRet(r: XdrReader): StorageVolGetPathRet {
  return {
    name: r.string(4194304),
  };
}

/** remote_domain_event_lifecycle_msg */
export interface DomainEventLifecycleMsg {
  dom: NonnullDomain; // remote_nonnull_domain dom
  event: number; // int event
  detail: number; // int detail
}

export function encodeDomainEventLifecycleMsg(w: XdrWriter, v: DomainEventLifecycleMsg): void {
  encodeNonnullDomain(w, v.dom);
  w.int(v.event);
  w.int(v.detail);
}

export function decodeDomainEventLifecycleMsg(r: XdrReader): DomainEventLifecycleMsg {
  return {
    dom: decodeNonnullDomain(r),
    event: r.int(),
    detail: r.int(),
  };
}

/** remote_domain_event_callback_lifecycle_msg */
export interface DomainEventCallbackLifecycleMsg {
  callbackID: number; // int callbackID
  msg: DomainEventLifecycleMsg; // remote_domain_event_lifecycle_msg msg
}

export function encodeDomainEventCallbackLifecycleMsg(w: XdrWriter, v: DomainEventCallbackLifecycleMsg): void {
  w.int(v.callbackID);
  encodeDomainEventLifecycleMsg(w, v.msg);
}

export function decodeDomainEventCallbackLifecycleMsg(r: XdrReader): DomainEventCallbackLifecycleMsg {
  return {
    callbackID: r.int(),
    msg: decodeDomainEventLifecycleMsg(r),
  };
}

/** remote_domain_is_active_args */
export interface DomainIsActiveArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
}

export function encodeDomainIsActiveArgs(w: XdrWriter, v: DomainIsActiveArgs): void {
  encodeNonnullDomain(w, v.dom);
}

export function decodeDomainIsActiveArgs(r: XdrReader): DomainIsActiveArgs {
  return {
    dom: decodeNonnullDomain(r),
  };
}

/** remote_domain_is_active_ret */
export interface DomainIsActiveRet {
  active: number; // int active
}

export function encodeDomainIsActiveRet(w: XdrWriter, v: DomainIsActiveRet): void {
  w.int(v.active);
}

export function decodeDomainIsActiveRet(r: XdrReader): DomainIsActiveRet {
  return {
    active: r.int(),
  };
}

/** remote_network_is_active_args */
export interface NetworkIsActiveArgs {
  net: NonnullNetwork; // remote_nonnull_network net
}

export function encodeNetworkIsActiveArgs(w: XdrWriter, v: NetworkIsActiveArgs): void {
  encodeNonnullNetwork(w, v.net);
}

export function decodeNetworkIsActiveArgs(r: XdrReader): NetworkIsActiveArgs {
  return {
    net: decodeNonnullNetwork(r),
  };
}

/** remote_network_is_active_ret */
export interface NetworkIsActiveRet {
  active: number; // int active
}

export function encodeNetworkIsActiveRet(w: XdrWriter, v: NetworkIsActiveRet): void {
  w.int(v.active);
}

export function decodeNetworkIsActiveRet(r: XdrReader): NetworkIsActiveRet {
  return {
    active: r.int(),
  };
}

/** remote_storage_pool_is_active_args */
export interface StoragePoolIsActiveArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
}

export function encodeStoragePoolIsActiveArgs(w: XdrWriter, v: StoragePoolIsActiveArgs): void {
  encodeNonnullStoragePool(w, v.pool);
}

export function decodeStoragePoolIsActiveArgs(r: XdrReader): StoragePoolIsActiveArgs {
  return {
    pool: decodeNonnullStoragePool(r),
  };
}

/** remote_storage_pool_is_active_ret */
export interface StoragePoolIsActiveRet {
  active: number; // int active
}

export function encodeStoragePoolIsActiveRet(w: XdrWriter, v: StoragePoolIsActiveRet): void {
  w.int(v.active);
}

export function decodeStoragePoolIsActiveRet(r: XdrReader): StoragePoolIsActiveRet {
  return {
    active: r.int(),
  };
}

/** remote_connect_domain_event_callback_register_any_args */
export interface ConnectDomainEventCallbackRegisterAnyArgs {
  eventID: number; // int eventID
  dom: NonnullDomain | null; // remote_domain dom
}

export function encodeConnectDomainEventCallbackRegisterAnyArgs(w: XdrWriter, v: ConnectDomainEventCallbackRegisterAnyArgs): void {
  w.int(v.eventID);
  if (v.dom === null) {
    w.uint(0);
  } else {
    w.uint(1);
    encodeNonnullDomain(w, v.dom);
  }
}

export function decodeConnectDomainEventCallbackRegisterAnyArgs(r: XdrReader): ConnectDomainEventCallbackRegisterAnyArgs {
  return {
    eventID: r.int(),
    dom: r.bool() ? decodeNonnullDomain(r) : null,
  };
}

/** remote_connect_domain_event_callback_register_any_ret */
export interface ConnectDomainEventCallbackRegisterAnyRet {
  callbackID: number; // int callbackID
}

export function encodeConnectDomainEventCallbackRegisterAnyRet(w: XdrWriter, v: ConnectDomainEventCallbackRegisterAnyRet): void {
  w.int(v.callbackID);
}

export function decodeConnectDomainEventCallbackRegisterAnyRet(r: XdrReader): ConnectDomainEventCallbackRegisterAnyRet {
  return {
    callbackID: r.int(),
  };
}

/** remote_connect_domain_event_callback_deregister_any_args */
export interface ConnectDomainEventCallbackDeregisterAnyArgs {
  callbackID: number; // int callbackID
}

export function encodeConnectDomainEventCallbackDeregisterAnyArgs(w: XdrWriter, v: ConnectDomainEventCallbackDeregisterAnyArgs): void {
  w.int(v.callbackID);
}

export function decodeConnectDomainEventCallbackDeregisterAnyArgs(r: XdrReader): ConnectDomainEventCallbackDeregisterAnyArgs {
  return {
    callbackID: r.int(),
  };
}

/** remote_storage_vol_upload_args */
export interface StorageVolUploadArgs {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
  offset: bigint; // unsigned hyper offset
  length: bigint; // unsigned hyper length
  flags: number; // unsigned int flags
}

export function encodeStorageVolUploadArgs(w: XdrWriter, v: StorageVolUploadArgs): void {
  encodeNonnullStorageVol(w, v.vol);
  w.uhyper(v.offset);
  w.uhyper(v.length);
  w.uint(v.flags);
}

export function decodeStorageVolUploadArgs(r: XdrReader): StorageVolUploadArgs {
  return {
    vol: decodeNonnullStorageVol(r),
    offset: r.uhyper(),
    length: r.uhyper(),
    flags: r.uint(),
  };
}

/** remote_storage_vol_download_args */
export interface StorageVolDownloadArgs {
  vol: NonnullStorageVol; // remote_nonnull_storage_vol vol
  offset: bigint; // unsigned hyper offset
  length: bigint; // unsigned hyper length
  flags: number; // unsigned int flags
}

export function encodeStorageVolDownloadArgs(w: XdrWriter, v: StorageVolDownloadArgs): void {
  encodeNonnullStorageVol(w, v.vol);
  w.uhyper(v.offset);
  w.uhyper(v.length);
  w.uint(v.flags);
}

export function decodeStorageVolDownloadArgs(r: XdrReader): StorageVolDownloadArgs {
  return {
    vol: decodeNonnullStorageVol(r),
    offset: r.uhyper(),
    length: r.uhyper(),
    flags: r.uint(),
  };
}

/** remote_domain_get_state_args */
export interface DomainGetStateArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  flags: number; // unsigned int flags
}

export function encodeDomainGetStateArgs(w: XdrWriter, v: DomainGetStateArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.uint(v.flags);
}

export function decodeDomainGetStateArgs(r: XdrReader): DomainGetStateArgs {
  return {
    dom: decodeNonnullDomain(r),
    flags: r.uint(),
  };
}

/** remote_domain_get_state_ret */
export interface DomainGetStateRet {
  state: number; // int state
  reason: number; // int reason
}

export function encodeDomainGetStateRet(w: XdrWriter, v: DomainGetStateRet): void {
  w.int(v.state);
  w.int(v.reason);
}

export function decodeDomainGetStateRet(r: XdrReader): DomainGetStateRet {
  return {
    state: r.int(),
    reason: r.int(),
  };
}

/** remote_domain_shutdown_flags_args */
export interface DomainShutdownFlagsArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  flags: number; // unsigned int flags
}

export function encodeDomainShutdownFlagsArgs(w: XdrWriter, v: DomainShutdownFlagsArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.uint(v.flags);
}

export function decodeDomainShutdownFlagsArgs(r: XdrReader): DomainShutdownFlagsArgs {
  return {
    dom: decodeNonnullDomain(r),
    flags: r.uint(),
  };
}

/** remote_connect_list_all_domains_args */
export interface ConnectListAllDomainsArgs {
  needResults: number; // int need_results
  flags: number; // unsigned int flags
}

export function encodeConnectListAllDomainsArgs(w: XdrWriter, v: ConnectListAllDomainsArgs): void {
  w.int(v.needResults);
  w.uint(v.flags);
}

export function decodeConnectListAllDomainsArgs(r: XdrReader): ConnectListAllDomainsArgs {
  return {
    needResults: r.int(),
    flags: r.uint(),
  };
}

/** remote_connect_list_all_domains_ret */
export interface ConnectListAllDomainsRet {
  domains: NonnullDomain[]; // remote_nonnull_domain domains<REMOTE_DOMAIN_LIST_MAX>
  ret: number; // unsigned int ret
}

export function encodeConnectListAllDomainsRet(w: XdrWriter, v: ConnectListAllDomainsRet): void {
  w.count(v.domains.length, 16384);
  for (const item of v.domains) encodeNonnullDomain(w, item);
  w.uint(v.ret);
}

export function decodeConnectListAllDomainsRet(r: XdrReader): ConnectListAllDomainsRet {
  const domains: NonnullDomain[] = [];
  for (let i = 0, n = r.count(16384, 24); i < n; i++) domains.push(decodeNonnullDomain(r));
  const ret = r.uint();
  return { domains, ret };
}

/** remote_connect_list_all_storage_pools_args */
export interface ConnectListAllStoragePoolsArgs {
  needResults: number; // int need_results
  flags: number; // unsigned int flags
}

export function encodeConnectListAllStoragePoolsArgs(w: XdrWriter, v: ConnectListAllStoragePoolsArgs): void {
  w.int(v.needResults);
  w.uint(v.flags);
}

export function decodeConnectListAllStoragePoolsArgs(r: XdrReader): ConnectListAllStoragePoolsArgs {
  return {
    needResults: r.int(),
    flags: r.uint(),
  };
}

/** remote_connect_list_all_storage_pools_ret */
export interface ConnectListAllStoragePoolsRet {
  pools: NonnullStoragePool[]; // remote_nonnull_storage_pool pools<REMOTE_STORAGE_POOL_LIST_MAX>
  ret: number; // unsigned int ret
}

export function encodeConnectListAllStoragePoolsRet(w: XdrWriter, v: ConnectListAllStoragePoolsRet): void {
  w.count(v.pools.length, 16384);
  for (const item of v.pools) encodeNonnullStoragePool(w, item);
  w.uint(v.ret);
}

export function decodeConnectListAllStoragePoolsRet(r: XdrReader): ConnectListAllStoragePoolsRet {
  const pools: NonnullStoragePool[] = [];
  for (let i = 0, n = r.count(16384, 20); i < n; i++) pools.push(decodeNonnullStoragePool(r));
  const ret = r.uint();
  return { pools, ret };
}

/** remote_storage_pool_list_all_volumes_args */
export interface StoragePoolListAllVolumesArgs {
  pool: NonnullStoragePool; // remote_nonnull_storage_pool pool
  needResults: number; // int need_results
  flags: number; // unsigned int flags
}

export function encodeStoragePoolListAllVolumesArgs(w: XdrWriter, v: StoragePoolListAllVolumesArgs): void {
  encodeNonnullStoragePool(w, v.pool);
  w.int(v.needResults);
  w.uint(v.flags);
}

export function decodeStoragePoolListAllVolumesArgs(r: XdrReader): StoragePoolListAllVolumesArgs {
  return {
    pool: decodeNonnullStoragePool(r),
    needResults: r.int(),
    flags: r.uint(),
  };
}

/** remote_storage_pool_list_all_volumes_ret */
export interface StoragePoolListAllVolumesRet {
  vols: NonnullStorageVol[]; // remote_nonnull_storage_vol vols<REMOTE_STORAGE_VOL_LIST_MAX>
  ret: number; // unsigned int ret
}

export function encodeStoragePoolListAllVolumesRet(w: XdrWriter, v: StoragePoolListAllVolumesRet): void {
  w.count(v.vols.length, 16384);
  for (const item of v.vols) encodeNonnullStorageVol(w, item);
  w.uint(v.ret);
}

export function decodeStoragePoolListAllVolumesRet(r: XdrReader): StoragePoolListAllVolumesRet {
  const vols: NonnullStorageVol[] = [];
  for (let i = 0, n = r.count(16384, 12); i < n; i++) vols.push(decodeNonnullStorageVol(r));
  const ret = r.uint();
  return { vols, ret };
}

/** remote_connect_list_all_networks_args */
export interface ConnectListAllNetworksArgs {
  needResults: number; // int need_results
  flags: number; // unsigned int flags
}

export function encodeConnectListAllNetworksArgs(w: XdrWriter, v: ConnectListAllNetworksArgs): void {
  w.int(v.needResults);
  w.uint(v.flags);
}

export function decodeConnectListAllNetworksArgs(r: XdrReader): ConnectListAllNetworksArgs {
  return {
    needResults: r.int(),
    flags: r.uint(),
  };
}

/** remote_connect_list_all_networks_ret */
export interface ConnectListAllNetworksRet {
  nets: NonnullNetwork[]; // remote_nonnull_network nets<REMOTE_NETWORK_LIST_MAX>
  ret: number; // unsigned int ret
}

export function encodeConnectListAllNetworksRet(w: XdrWriter, v: ConnectListAllNetworksRet): void {
  w.count(v.nets.length, 16384);
  for (const item of v.nets) encodeNonnullNetwork(w, item);
  w.uint(v.ret);
}

export function decodeConnectListAllNetworksRet(r: XdrReader): ConnectListAllNetworksRet {
  const nets: NonnullNetwork[] = [];
  for (let i = 0, n = r.count(16384, 20); i < n; i++) nets.push(decodeNonnullNetwork(r));
  const ret = r.uint();
  return { nets, ret };
}

/** remote_domain_event_callback_agent_lifecycle_msg */
export interface DomainEventCallbackAgentLifecycleMsg {
  callbackID: number; // int callbackID
  dom: NonnullDomain; // remote_nonnull_domain dom
  state: number; // int state
  reason: number; // int reason
}

export function encodeDomainEventCallbackAgentLifecycleMsg(w: XdrWriter, v: DomainEventCallbackAgentLifecycleMsg): void {
  w.int(v.callbackID);
  encodeNonnullDomain(w, v.dom);
  w.int(v.state);
  w.int(v.reason);
}

export function decodeDomainEventCallbackAgentLifecycleMsg(r: XdrReader): DomainEventCallbackAgentLifecycleMsg {
  return {
    callbackID: r.int(),
    dom: decodeNonnullDomain(r),
    state: r.int(),
    reason: r.int(),
  };
}

/** remote_domain_ip_addr */
export interface DomainIPAddr {
  type: number; // int type
  addr: string; // remote_nonnull_string addr
  prefix: number; // unsigned int prefix
}

export function encodeDomainIPAddr(w: XdrWriter, v: DomainIPAddr): void {
  w.int(v.type);
  w.string(v.addr, 4194304);
  w.uint(v.prefix);
}

export function decodeDomainIPAddr(r: XdrReader): DomainIPAddr {
  return {
    type: r.int(),
    addr: r.string(4194304),
    prefix: r.uint(),
  };
}

/** remote_domain_interface */
export interface DomainInterface {
  name: string; // remote_nonnull_string name
  hwaddr: string | null; // remote_string hwaddr
  addrs: DomainIPAddr[]; // remote_domain_ip_addr addrs<REMOTE_DOMAIN_IP_ADDR_MAX>
}

export function encodeDomainInterface(w: XdrWriter, v: DomainInterface): void {
  w.string(v.name, 4194304);
  if (v.hwaddr === null) {
    w.uint(0);
  } else {
    w.uint(1);
    w.string(v.hwaddr, 4194304);
  }
  w.count(v.addrs.length, 2048);
  for (const item of v.addrs) encodeDomainIPAddr(w, item);
}

export function decodeDomainInterface(r: XdrReader): DomainInterface {
  const name = r.string(4194304);
  const hwaddr = r.bool() ? r.string(4194304) : null;
  const addrs: DomainIPAddr[] = [];
  for (let i = 0, n = r.count(2048, 12); i < n; i++) addrs.push(decodeDomainIPAddr(r));
  return { name, hwaddr, addrs };
}

/** remote_domain_interface_addresses_args */
export interface DomainInterfaceAddressesArgs {
  dom: NonnullDomain; // remote_nonnull_domain dom
  source: number; // unsigned int source
  flags: number; // unsigned int flags
}

export function encodeDomainInterfaceAddressesArgs(w: XdrWriter, v: DomainInterfaceAddressesArgs): void {
  encodeNonnullDomain(w, v.dom);
  w.uint(v.source);
  w.uint(v.flags);
}

export function decodeDomainInterfaceAddressesArgs(r: XdrReader): DomainInterfaceAddressesArgs {
  return {
    dom: decodeNonnullDomain(r),
    source: r.uint(),
    flags: r.uint(),
  };
}

/** remote_domain_interface_addresses_ret */
export interface DomainInterfaceAddressesRet {
  ifaces: DomainInterface[]; // remote_domain_interface ifaces<REMOTE_DOMAIN_INTERFACE_MAX>
}

export function encodeDomainInterfaceAddressesRet(w: XdrWriter, v: DomainInterfaceAddressesRet): void {
  w.count(v.ifaces.length, 2048);
  for (const item of v.ifaces) encodeDomainInterface(w, item);
}

export function decodeDomainInterfaceAddressesRet(r: XdrReader): DomainInterfaceAddressesRet {
  const ifaces: DomainInterface[] = [];
  for (let i = 0, n = r.count(2048, 12); i < n; i++) ifaces.push(decodeDomainInterface(r));
  return { ifaces };
}

// -------------------- Procedures

/** The payload of a procedure with void args or a void ret: nothing. */
export function encodeVoid(_w: XdrWriter, _v: void): void {
  // An empty payload.
}

export function decodeVoid(_r: XdrReader): undefined {
  return undefined;
}

/** REMOTE_PROC_CONNECT_OPEN = 1 */
export const ConnectOpen: Procedure<ConnectOpenArgs, undefined> = {
  name: 'ConnectOpen',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 1,
  encode: encodeConnectOpenArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_CONNECT_CLOSE = 2 */
export const ConnectClose: Procedure<void, undefined> = {
  name: 'ConnectClose',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 2,
  encode: encodeVoid,
  decode: decodeVoid,
};

/** REMOTE_PROC_CONNECT_GET_TYPE = 3 */
export const ConnectGetType: Procedure<void, ConnectGetTypeRet> = {
  name: 'ConnectGetType',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 3,
  encode: encodeVoid,
  decode: decodeConnectGetTypeRet,
};

/** REMOTE_PROC_CONNECT_GET_VERSION = 4 */
export const ConnectGetVersion: Procedure<void, ConnectGetVersionRet> = {
  name: 'ConnectGetVersion',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 4,
  encode: encodeVoid,
  decode: decodeConnectGetVersionRet,
};

/** REMOTE_PROC_CONNECT_GET_LIB_VERSION = 157 */
export const ConnectGetLibVersion: Procedure<void, ConnectGetLibVersionRet> = {
  name: 'ConnectGetLibVersion',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 157,
  encode: encodeVoid,
  decode: decodeConnectGetLibVersionRet,
};

/** REMOTE_PROC_CONNECT_GET_HOSTNAME = 59 */
export const ConnectGetHostname: Procedure<void, ConnectGetHostnameRet> = {
  name: 'ConnectGetHostname',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 59,
  encode: encodeVoid,
  decode: decodeConnectGetHostnameRet,
};

/** REMOTE_PROC_CONNECT_GET_URI = 110 */
export const ConnectGetURI: Procedure<void, ConnectGetURIRet> = {
  name: 'ConnectGetURI',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 110,
  encode: encodeVoid,
  decode: decodeConnectGetURIRet,
};

/** REMOTE_PROC_CONNECT_GET_CAPABILITIES = 7 */
export const ConnectGetCapabilities: Procedure<void, ConnectGetCapabilitiesRet> = {
  name: 'ConnectGetCapabilities',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 7,
  encode: encodeVoid,
  decode: decodeConnectGetCapabilitiesRet,
};

/** REMOTE_PROC_CONNECT_SUPPORTS_FEATURE = 60 */
export const ConnectSupportsFeature: Procedure<ConnectSupportsFeatureArgs, ConnectSupportsFeatureRet> = {
  name: 'ConnectSupportsFeature',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 60,
  encode: encodeConnectSupportsFeatureArgs,
  decode: decodeConnectSupportsFeatureRet,
};

/** REMOTE_PROC_AUTH_LIST = 66 */
export const AuthList: Procedure<void, AuthListRet> = {
  name: 'AuthList',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 66,
  encode: encodeVoid,
  decode: decodeAuthListRet,
};

/** REMOTE_PROC_AUTH_POLKIT = 70 */
export const AuthPolkit: Procedure<void, AuthPolkitRet> = {
  name: 'AuthPolkit',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 70,
  encode: encodeVoid,
  decode: decodeAuthPolkitRet,
};

/** REMOTE_PROC_CONNECT_REGISTER_CLOSE_CALLBACK = 360 */
export const ConnectRegisterCloseCallback: Procedure<void, undefined> = {
  name: 'ConnectRegisterCloseCallback',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 360,
  encode: encodeVoid,
  decode: decodeVoid,
};

/** REMOTE_PROC_CONNECT_UNREGISTER_CLOSE_CALLBACK = 361 */
export const ConnectUnregisterCloseCallback: Procedure<void, undefined> = {
  name: 'ConnectUnregisterCloseCallback',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 361,
  encode: encodeVoid,
  decode: decodeVoid,
};

/** REMOTE_PROC_NODE_GET_INFO = 6 */
export const NodeGetInfo: Procedure<void, NodeGetInfoRet> = {
  name: 'NodeGetInfo',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 6,
  encode: encodeVoid,
  decode: decodeNodeGetInfoRet,
};

/** REMOTE_PROC_CONNECT_LIST_ALL_DOMAINS = 273 */
export const ConnectListAllDomains: Procedure<ConnectListAllDomainsArgs, ConnectListAllDomainsRet> = {
  name: 'ConnectListAllDomains',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 273,
  encode: encodeConnectListAllDomainsArgs,
  decode: decodeConnectListAllDomainsRet,
};

/** REMOTE_PROC_DOMAIN_LOOKUP_BY_NAME = 23 */
export const DomainLookupByName: Procedure<DomainLookupByNameArgs, DomainLookupByNameRet> = {
  name: 'DomainLookupByName',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 23,
  encode: encodeDomainLookupByNameArgs,
  decode: decodeDomainLookupByNameRet,
};

/** REMOTE_PROC_DOMAIN_LOOKUP_BY_UUID = 24 */
export const DomainLookupByUUID: Procedure<DomainLookupByUUIDArgs, DomainLookupByUUIDRet> = {
  name: 'DomainLookupByUUID',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 24,
  encode: encodeDomainLookupByUUIDArgs,
  decode: decodeDomainLookupByUUIDRet,
};

/** REMOTE_PROC_DOMAIN_GET_STATE = 212 */
export const DomainGetState: Procedure<DomainGetStateArgs, DomainGetStateRet> = {
  name: 'DomainGetState',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 212,
  encode: encodeDomainGetStateArgs,
  decode: decodeDomainGetStateRet,
};

/** REMOTE_PROC_DOMAIN_GET_INFO = 16 */
export const DomainGetInfo: Procedure<DomainGetInfoArgs, DomainGetInfoRet> = {
  name: 'DomainGetInfo',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 16,
  encode: encodeDomainGetInfoArgs,
  decode: decodeDomainGetInfoRet,
};

/** REMOTE_PROC_DOMAIN_DEFINE_XML = 11 */
export const DomainDefineXML: Procedure<DomainDefineXMLArgs, DomainDefineXMLRet> = {
  name: 'DomainDefineXML',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 11,
  encode: encodeDomainDefineXMLArgs,
  decode: decodeDomainDefineXMLRet,
};

/** REMOTE_PROC_DOMAIN_DEFINE_XML_FLAGS = 350 */
export const DomainDefineXMLFlags: Procedure<DomainDefineXMLFlagsArgs, DomainDefineXMLFlagsRet> = {
  name: 'DomainDefineXMLFlags',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 350,
  encode: encodeDomainDefineXMLFlagsArgs,
  decode: decodeDomainDefineXMLFlagsRet,
};

/** REMOTE_PROC_DOMAIN_CREATE = 9 */
export const DomainCreate: Procedure<DomainCreateArgs, undefined> = {
  name: 'DomainCreate',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 9,
  encode: encodeDomainCreateArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_DOMAIN_CREATE_WITH_FLAGS = 196 */
export const DomainCreateWithFlags: Procedure<DomainCreateWithFlagsArgs, DomainCreateWithFlagsRet> = {
  name: 'DomainCreateWithFlags',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 196,
  encode: encodeDomainCreateWithFlagsArgs,
  decode: decodeDomainCreateWithFlagsRet,
};

/** REMOTE_PROC_DOMAIN_DESTROY = 12 */
export const DomainDestroy: Procedure<DomainDestroyArgs, undefined> = {
  name: 'DomainDestroy',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 12,
  encode: encodeDomainDestroyArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_DOMAIN_DESTROY_FLAGS = 234 */
export const DomainDestroyFlags: Procedure<DomainDestroyFlagsArgs, undefined> = {
  name: 'DomainDestroyFlags',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 234,
  encode: encodeDomainDestroyFlagsArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_DOMAIN_UNDEFINE = 35 */
export const DomainUndefine: Procedure<DomainUndefineArgs, undefined> = {
  name: 'DomainUndefine',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 35,
  encode: encodeDomainUndefineArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_DOMAIN_UNDEFINE_FLAGS = 231 */
export const DomainUndefineFlags: Procedure<DomainUndefineFlagsArgs, undefined> = {
  name: 'DomainUndefineFlags',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 231,
  encode: encodeDomainUndefineFlagsArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_DOMAIN_GET_XML_DESC = 14 */
export const DomainGetXMLDesc: Procedure<DomainGetXMLDescArgs, DomainGetXMLDescRet> = {
  name: 'DomainGetXMLDesc',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 14,
  encode: encodeDomainGetXMLDescArgs,
  decode: decodeDomainGetXMLDescRet,
};

/** REMOTE_PROC_DOMAIN_GET_METADATA = 265 */
export const DomainGetMetadata: Procedure<DomainGetMetadataArgs, DomainGetMetadataRet> = {
  name: 'DomainGetMetadata',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 265,
  encode: encodeDomainGetMetadataArgs,
  decode: decodeDomainGetMetadataRet,
};

/** REMOTE_PROC_DOMAIN_SET_METADATA = 264 */
export const DomainSetMetadata: Procedure<DomainSetMetadataArgs, undefined> = {
  name: 'DomainSetMetadata',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 264,
  encode: encodeDomainSetMetadataArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_DOMAIN_INTERFACE_ADDRESSES = 353 */
export const DomainInterfaceAddresses: Procedure<DomainInterfaceAddressesArgs, DomainInterfaceAddressesRet> = {
  name: 'DomainInterfaceAddresses',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 353,
  encode: encodeDomainInterfaceAddressesArgs,
  decode: decodeDomainInterfaceAddressesRet,
};

/** REMOTE_PROC_DOMAIN_SHUTDOWN_FLAGS = 258 */
export const DomainShutdownFlags: Procedure<DomainShutdownFlagsArgs, undefined> = {
  name: 'DomainShutdownFlags',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 258,
  encode: encodeDomainShutdownFlagsArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_CONNECT_DOMAIN_EVENT_CALLBACK_REGISTER_ANY = 316 */
export const ConnectDomainEventCallbackRegisterAny: Procedure<ConnectDomainEventCallbackRegisterAnyArgs, ConnectDomainEventCallbackRegisterAnyRet> = {
  name: 'ConnectDomainEventCallbackRegisterAny',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 316,
  encode: encodeConnectDomainEventCallbackRegisterAnyArgs,
  decode: decodeConnectDomainEventCallbackRegisterAnyRet,
};

/** REMOTE_PROC_CONNECT_DOMAIN_EVENT_CALLBACK_DEREGISTER_ANY = 317 */
export const ConnectDomainEventCallbackDeregisterAny: Procedure<ConnectDomainEventCallbackDeregisterAnyArgs, undefined> = {
  name: 'ConnectDomainEventCallbackDeregisterAny',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 317,
  encode: encodeConnectDomainEventCallbackDeregisterAnyArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_DOMAIN_EVENT_CALLBACK_LIFECYCLE = 318 */
export const DomainEventCallbackLifecycle: Procedure<void, DomainEventCallbackLifecycleMsg> = {
  name: 'DomainEventCallbackLifecycle',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 318,
  encode: encodeVoid,
  decode: decodeDomainEventCallbackLifecycleMsg,
};

/** REMOTE_PROC_DOMAIN_EVENT_CALLBACK_AGENT_LIFECYCLE = 348 */
export const DomainEventCallbackAgentLifecycle: Procedure<void, DomainEventCallbackAgentLifecycleMsg> = {
  name: 'DomainEventCallbackAgentLifecycle',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 348,
  encode: encodeVoid,
  decode: decodeDomainEventCallbackAgentLifecycleMsg,
};

/** REMOTE_PROC_DOMAIN_GET_AUTOSTART = 15 */
export const DomainGetAutostart: Procedure<DomainGetAutostartArgs, DomainGetAutostartRet> = {
  name: 'DomainGetAutostart',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 15,
  encode: encodeDomainGetAutostartArgs,
  decode: decodeDomainGetAutostartRet,
};

/** REMOTE_PROC_DOMAIN_SET_AUTOSTART = 29 */
export const DomainSetAutostart: Procedure<DomainSetAutostartArgs, undefined> = {
  name: 'DomainSetAutostart',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 29,
  encode: encodeDomainSetAutostartArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_DOMAIN_IS_ACTIVE = 150 */
export const DomainIsActive: Procedure<DomainIsActiveArgs, DomainIsActiveRet> = {
  name: 'DomainIsActive',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 150,
  encode: encodeDomainIsActiveArgs,
  decode: decodeDomainIsActiveRet,
};

/** REMOTE_PROC_CONNECT_LIST_ALL_STORAGE_POOLS = 281 */
export const ConnectListAllStoragePools: Procedure<ConnectListAllStoragePoolsArgs, ConnectListAllStoragePoolsRet> = {
  name: 'ConnectListAllStoragePools',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 281,
  encode: encodeConnectListAllStoragePoolsArgs,
  decode: decodeConnectListAllStoragePoolsRet,
};

/** REMOTE_PROC_STORAGE_POOL_LOOKUP_BY_NAME = 84 */
export const StoragePoolLookupByName: Procedure<StoragePoolLookupByNameArgs, StoragePoolLookupByNameRet> = {
  name: 'StoragePoolLookupByName',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 84,
  encode: encodeStoragePoolLookupByNameArgs,
  decode: decodeStoragePoolLookupByNameRet,
};

/** REMOTE_PROC_STORAGE_POOL_LOOKUP_BY_UUID = 85 */
export const StoragePoolLookupByUUID: Procedure<StoragePoolLookupByUUIDArgs, StoragePoolLookupByUUIDRet> = {
  name: 'StoragePoolLookupByUUID',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 85,
  encode: encodeStoragePoolLookupByUUIDArgs,
  decode: decodeStoragePoolLookupByUUIDRet,
};

/** REMOTE_PROC_STORAGE_POOL_LOOKUP_BY_VOLUME = 86 */
export const StoragePoolLookupByVolume: Procedure<StoragePoolLookupByVolumeArgs, StoragePoolLookupByVolumeRet> = {
  name: 'StoragePoolLookupByVolume',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 86,
  encode: encodeStoragePoolLookupByVolumeArgs,
  decode: decodeStoragePoolLookupByVolumeRet,
};

/** REMOTE_PROC_STORAGE_POOL_GET_INFO = 87 */
export const StoragePoolGetInfo: Procedure<StoragePoolGetInfoArgs, StoragePoolGetInfoRet> = {
  name: 'StoragePoolGetInfo',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 87,
  encode: encodeStoragePoolGetInfoArgs,
  decode: decodeStoragePoolGetInfoRet,
};

/** REMOTE_PROC_STORAGE_POOL_REFRESH = 83 */
export const StoragePoolRefresh: Procedure<StoragePoolRefreshArgs, undefined> = {
  name: 'StoragePoolRefresh',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 83,
  encode: encodeStoragePoolRefreshArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_STORAGE_POOL_IS_ACTIVE = 154 */
export const StoragePoolIsActive: Procedure<StoragePoolIsActiveArgs, StoragePoolIsActiveRet> = {
  name: 'StoragePoolIsActive',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 154,
  encode: encodeStoragePoolIsActiveArgs,
  decode: decodeStoragePoolIsActiveRet,
};

/** REMOTE_PROC_STORAGE_POOL_GET_XML_DESC = 88 */
export const StoragePoolGetXMLDesc: Procedure<StoragePoolGetXMLDescArgs, StoragePoolGetXMLDescRet> = {
  name: 'StoragePoolGetXMLDesc',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 88,
  encode: encodeStoragePoolGetXMLDescArgs,
  decode: decodeStoragePoolGetXMLDescRet,
};

/** REMOTE_PROC_STORAGE_POOL_LIST_ALL_VOLUMES = 282 */
export const StoragePoolListAllVolumes: Procedure<StoragePoolListAllVolumesArgs, StoragePoolListAllVolumesRet> = {
  name: 'StoragePoolListAllVolumes',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 282,
  encode: encodeStoragePoolListAllVolumesArgs,
  decode: decodeStoragePoolListAllVolumesRet,
};

/** REMOTE_PROC_STORAGE_POOL_CREATE = 78 */
export const StoragePoolCreate: Procedure<StoragePoolCreateArgs, undefined> = {
  name: 'StoragePoolCreate',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 78,
  encode: encodeStoragePoolCreateArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_STORAGE_POOL_DESTROY = 80 */
export const StoragePoolDestroy: Procedure<StoragePoolDestroyArgs, undefined> = {
  name: 'StoragePoolDestroy',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 80,
  encode: encodeStoragePoolDestroyArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_STORAGE_POOL_DEFINE_XML = 77 */
export const StoragePoolDefineXML: Procedure<StoragePoolDefineXMLArgs, StoragePoolDefineXMLRet> = {
  name: 'StoragePoolDefineXML',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 77,
  encode: encodeStoragePoolDefineXMLArgs,
  decode: decodeStoragePoolDefineXMLRet,
};

/** REMOTE_PROC_STORAGE_POOL_UNDEFINE = 82 */
export const StoragePoolUndefine: Procedure<StoragePoolUndefineArgs, undefined> = {
  name: 'StoragePoolUndefine',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 82,
  encode: encodeStoragePoolUndefineArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_STORAGE_VOL_LOOKUP_BY_NAME = 95 */
export const StorageVolLookupByName: Procedure<StorageVolLookupByNameArgs, StorageVolLookupByNameRet> = {
  name: 'StorageVolLookupByName',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 95,
  encode: encodeStorageVolLookupByNameArgs,
  decode: decodeStorageVolLookupByNameRet,
};

/** REMOTE_PROC_STORAGE_VOL_CREATE_XML = 93 */
export const StorageVolCreateXML: Procedure<StorageVolCreateXMLArgs, StorageVolCreateXMLRet> = {
  name: 'StorageVolCreateXML',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 93,
  encode: encodeStorageVolCreateXMLArgs,
  decode: decodeStorageVolCreateXMLRet,
};

/** REMOTE_PROC_STORAGE_VOL_CREATE_XML_FROM = 125 */
export const StorageVolCreateXMLFrom: Procedure<StorageVolCreateXMLFromArgs, StorageVolCreateXMLFromRet> = {
  name: 'StorageVolCreateXMLFrom',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 125,
  encode: encodeStorageVolCreateXMLFromArgs,
  decode: decodeStorageVolCreateXMLFromRet,
};

/** REMOTE_PROC_STORAGE_VOL_DELETE = 94 */
export const StorageVolDelete: Procedure<StorageVolDeleteArgs, undefined> = {
  name: 'StorageVolDelete',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 94,
  encode: encodeStorageVolDeleteArgs,
  decode: decodeVoid,
};

/** REMOTE_PROC_STORAGE_VOL_GET_INFO = 98 */
export const StorageVolGetInfo: Procedure<StorageVolGetInfoArgs, StorageVolGetInfoRet> = {
  name: 'StorageVolGetInfo',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 98,
  encode: encodeStorageVolGetInfoArgs,
  decode: decodeStorageVolGetInfoRet,
};

/** REMOTE_PROC_STORAGE_VOL_GET_PATH = 100 */
export const StorageVolGetPath: Procedure<StorageVolGetPathArgs, StorageVolGetPathRet> = {
  name: 'StorageVolGetPath',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 100,
  encode: encodeStorageVolGetPathArgs,
  decode: decodeStorageVolGetPathRet,
};

/** REMOTE_PROC_STORAGE_VOL_GET_XML_DESC = 99 */
export const StorageVolGetXMLDesc: Procedure<StorageVolGetXMLDescArgs, StorageVolGetXMLDescRet> = {
  name: 'StorageVolGetXMLDesc',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 99,
  encode: encodeStorageVolGetXMLDescArgs,
  decode: decodeStorageVolGetXMLDescRet,
};

/** REMOTE_PROC_STORAGE_VOL_UPLOAD = 208, @writestream */
export const StorageVolUpload: Procedure<StorageVolUploadArgs, undefined> = {
  name: 'StorageVolUpload',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 208,
  encode: encodeStorageVolUploadArgs,
  decode: decodeVoid,
  stream: 'write',
};

/** REMOTE_PROC_STORAGE_VOL_DOWNLOAD = 209, @readstream */
export const StorageVolDownload: Procedure<StorageVolDownloadArgs, undefined> = {
  name: 'StorageVolDownload',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 209,
  encode: encodeStorageVolDownloadArgs,
  decode: decodeVoid,
  stream: 'read',
};

/** REMOTE_PROC_CONNECT_LIST_ALL_NETWORKS = 283 */
export const ConnectListAllNetworks: Procedure<ConnectListAllNetworksArgs, ConnectListAllNetworksRet> = {
  name: 'ConnectListAllNetworks',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 283,
  encode: encodeConnectListAllNetworksArgs,
  decode: decodeConnectListAllNetworksRet,
};

/** REMOTE_PROC_NETWORK_LOOKUP_BY_NAME = 46 */
export const NetworkLookupByName: Procedure<NetworkLookupByNameArgs, NetworkLookupByNameRet> = {
  name: 'NetworkLookupByName',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 46,
  encode: encodeNetworkLookupByNameArgs,
  decode: decodeNetworkLookupByNameRet,
};

/** REMOTE_PROC_NETWORK_IS_ACTIVE = 152 */
export const NetworkIsActive: Procedure<NetworkIsActiveArgs, NetworkIsActiveRet> = {
  name: 'NetworkIsActive',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 152,
  encode: encodeNetworkIsActiveArgs,
  decode: decodeNetworkIsActiveRet,
};

/** REMOTE_PROC_NETWORK_GET_XML_DESC = 43 */
export const NetworkGetXMLDesc: Procedure<NetworkGetXMLDescArgs, NetworkGetXMLDescRet> = {
  name: 'NetworkGetXMLDesc',
  program: REMOTE_PROGRAM,
  version: REMOTE_PROTOCOL_VERSION,
  proc: 43,
  encode: encodeNetworkGetXMLDescArgs,
  decode: decodeNetworkGetXMLDescRet,
};
