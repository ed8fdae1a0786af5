// libvirt's virErrorNumber values kvm2 names (include/libvirt/virterror.h, 9.0.0) and the
// kind each maps to. The full classification table, with Node and HTTP rows, is docs/errors.md.
import type { ErrorKind } from '../error-kind.js';

export const VirErr = {
  OK: 0,
  INTERNAL_ERROR: 1,
  NO_MEMORY: 2,
  NO_SUPPORT: 3,
  NO_CONNECT: 5,
  INVALID_CONN: 6,
  INVALID_DOMAIN: 7,
  INVALID_ARG: 8,
  OPERATION_FAILED: 9,
  XML_ERROR: 27,
  DOM_EXIST: 28,
  OPERATION_DENIED: 29,
  NETWORK_EXIST: 37,
  SYSTEM_ERROR: 38,
  RPC: 39,
  NO_DOMAIN: 42,
  NO_NETWORK: 43,
  AUTH_FAILED: 45,
  INVALID_STORAGE_POOL: 46,
  INVALID_STORAGE_VOL: 47,
  NO_STORAGE_POOL: 49,
  NO_STORAGE_VOL: 50,
  OPERATION_INVALID: 55,
  CONFIG_UNSUPPORTED: 67,
  OPERATION_TIMEOUT: 68,
  INVALID_STREAM: 73,
  ARGUMENT_UNSUPPORTED: 74,
  OPERATION_ABORTED: 78,
  AUTH_CANCELLED: 79,
  NO_DOMAIN_METADATA: 80,
  OPERATION_UNSUPPORTED: 84,
  AGENT_UNRESPONSIVE: 86,
  RESOURCE_BUSY: 87,
  ACCESS_DENIED: 88,
  STORAGE_VOL_EXIST: 90,
  XML_INVALID_SCHEMA: 92,
  AUTH_UNAVAILABLE: 94,
} as const;

const kinds = new Map<number, ErrorKind>([
  [VirErr.NO_DOMAIN, 'not_found'],
  [VirErr.NO_STORAGE_VOL, 'not_found'],
  [VirErr.NO_STORAGE_POOL, 'not_found'],
  [VirErr.NO_NETWORK, 'not_found'],
  [VirErr.NO_DOMAIN_METADATA, 'not_found'],
  // The link or the daemon is busy or going away: another attempt may well succeed.
  [VirErr.NO_CONNECT, 'transient'],
  [VirErr.INVALID_CONN, 'transient'],
  [VirErr.RPC, 'transient'],
  [VirErr.OPERATION_TIMEOUT, 'transient'],
  [VirErr.AGENT_UNRESPONSIVE, 'transient'],
  [VirErr.RESOURCE_BUSY, 'transient'],
  [VirErr.OPERATION_ABORTED, 'transient'],
  [VirErr.NO_MEMORY, 'transient'],
  [VirErr.SYSTEM_ERROR, 'transient'],
  [VirErr.INTERNAL_ERROR, 'transient'],
  [VirErr.OPERATION_FAILED, 'transient'],
]);

/** Kind of a libvirt error code. Codes not listed are permanent: retrying cannot fix them. */
export function libvirtErrorKind(code: number): ErrorKind {
  return kinds.get(code) ?? 'permanent';
}
