// libvirt's virErrorNumber values kvm2 names (include/libvirt/virterror.h, 9.0.0) and the
// kind of each, read from the one classification table (src/error-table.ts, docs/errors.md).
import type { ErrorKind } from '../error-kind.js';
import { ERROR_TABLE, type LibvirtRow } from '../error-table.js';

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
  NO_SECRET: 66,
  CONFIG_UNSUPPORTED: 67,
  OPERATION_TIMEOUT: 68,
  NO_DOMAIN_SNAPSHOT: 72,
  INVALID_STREAM: 73,
  ARGUMENT_UNSUPPORTED: 74,
  STORAGE_POOL_BUILT: 76,
  OPERATION_ABORTED: 78,
  AUTH_CANCELLED: 79,
  NO_DOMAIN_METADATA: 80,
  OVERFLOW: 82,
  OPERATION_UNSUPPORTED: 84,
  AGENT_UNRESPONSIVE: 86,
  RESOURCE_BUSY: 87,
  ACCESS_DENIED: 88,
  STORAGE_VOL_EXIST: 90,
  XML_INVALID_SCHEMA: 92,
  AUTH_UNAVAILABLE: 94,
  MULTIPLE_DOMAINS: 110,
} as const;

const libvirtRows = ERROR_TABLE.filter((r): r is LibvirtRow => r.source === 'libvirt');

/** The row for a libvirt error: the code with its int1 first, then the code alone, then '*'. */
export function libvirtErrorRow(code: number, int1?: number): LibvirtRow | undefined {
  return (
    libvirtRows.find((r) => r.match === code && r.int1 !== undefined && r.int1 === int1) ??
    libvirtRows.find((r) => r.match === code && r.int1 === undefined) ??
    libvirtRows.find((r) => r.match === '*')
  );
}

/**
 * Kind of a libvirt error, from the libvirt rows of src/error-table.ts. `int1` is the errno
 * libvirt sends with SYSTEM_ERROR (28 ENOSPC is quota_exceeded). A code no row names is
 * permanent: the daemon gave a definite answer, and the same call would get it again.
 */
export function libvirtErrorKind(code: number, int1?: number): ErrorKind {
  return libvirtErrorRow(code, int1)?.kind ?? 'permanent';
}
