// libvirt's own errors (include/libvirt/virterror.h, 9.0.0): a remote_error's virErrorNumber,
// and the errno libvirt sends in int1 where it matters. Part of the one classification table
// (src/errors/table.ts).
import type { ErrorKind } from './kind.js';
import type { LibvirtRow } from './rows.js';

const L = (
  match: number | '*',
  name: string,
  kind: ErrorKind,
  why: string,
  int1?: number,
): LibvirtRow =>
  int1 === undefined
    ? { source: 'libvirt', match, name, kind, why }
    : { source: 'libvirt', match, name, int1, kind, why };

export const LIBVIRT_ROWS: readonly LibvirtRow[] = [
  L(42, 'NO_DOMAIN', 'not_found', 'No domain of that name or uuid: the only "gone" for a domain.'),
  L(50, 'NO_STORAGE_VOL', 'not_found', 'No volume of that name in the pool.'),
  L(49, 'NO_STORAGE_POOL', 'not_found', 'The configured pool does not exist on the host.'),
  L(43, 'NO_NETWORK', 'not_found', 'The configured network does not exist on the host.'),
  L(80, 'NO_DOMAIN_METADATA', 'not_found', 'The domain has no element in that namespace.'),
  L(66, 'NO_SECRET', 'not_found', 'No secret with that uuid or usage.'),
  L(72, 'NO_DOMAIN_SNAPSHOT', 'not_found', 'No snapshot of that name.'),
  L(
    1,
    'INTERNAL_ERROR',
    'transient',
    'libvirt or QEMU hit an unexpected condition (a monitor that closed, a race); often passes.',
  ),
  L(2, 'NO_MEMORY', 'transient', 'The daemon ran out of memory; another attempt may find some.'),
  L(
    5,
    'NO_CONNECT',
    'transient',
    'The daemon could not reach its hypervisor, e.g. while restarting.',
  ),
  L(
    6,
    'INVALID_CONN',
    'transient',
    'The connection went away under the call; the next call redials.',
  ),
  L(9, 'OPERATION_FAILED', 'transient', 'A generic failure of an action that may succeed later.'),
  L(
    38,
    'SYSTEM_ERROR',
    'quota_exceeded',
    'A system call failed with ENOSPC (int1 28): the pool or its filesystem is full.',
    28,
  ),
  L(
    38,
    'SYSTEM_ERROR',
    'quota_exceeded',
    'A system call failed with EDQUOT (int1 122): a disk quota is exhausted.',
    122,
  ),
  L(
    38,
    'SYSTEM_ERROR',
    'permanent',
    'A system call failed with EACCES (int1 13): file permissions or AppArmor need a person.',
    13,
  ),
  L(
    38,
    'SYSTEM_ERROR',
    'transient',
    'Any other failed system call (I/O, a dying socket); retry with backoff.',
  ),
  L(
    39,
    'RPC',
    'transient',
    'The RPC layer failed (link, framing, "authentication required" on a half-open link).',
  ),
  L(
    68,
    'OPERATION_TIMEOUT',
    'transient',
    "The daemon timed out, typically waiting for a domain's state-change lock.",
  ),
  L(
    78,
    'OPERATION_ABORTED',
    'transient',
    'The operation was aborted on the host (a cancelled job or stream).',
  ),
  L(86, 'AGENT_UNRESPONSIVE', 'transient', 'The guest agent is not answering yet (still booting).'),
  L(87, 'RESOURCE_BUSY', 'transient', 'The object is in use by another job; it frees up.'),
  L(3, 'NO_SUPPORT', 'permanent', 'The driver does not support this call.'),
  L(7, 'INVALID_DOMAIN', 'permanent', 'A malformed domain reference: a bug, not a condition.'),
  L(
    8,
    'INVALID_ARG',
    'permanent',
    'The daemon refused an argument; the same call gets the same answer.',
  ),
  L(
    27,
    'XML_ERROR',
    'permanent',
    'The XML kvm2 sent is malformed or describes an impossible device.',
  ),
  L(
    28,
    'DOM_EXIST',
    'permanent',
    'A domain of that name or uuid already exists; create decides by uid before this.',
  ),
  L(29, 'OPERATION_DENIED', 'permanent', 'The daemon refuses this operation on this object.'),
  L(37, 'NETWORK_EXIST', 'permanent', 'A network of that name already exists.'),
  L(
    45,
    'AUTH_FAILED',
    'permanent',
    'Authentication to libvirtd failed: credentials or polkit rules need a person.',
  ),
  L(46, 'INVALID_STORAGE_POOL', 'permanent', 'A malformed pool reference.'),
  L(47, 'INVALID_STORAGE_VOL', 'permanent', 'A malformed volume reference.'),
  L(
    55,
    'OPERATION_INVALID',
    'permanent',
    'The object is not in a state that allows the call (e.g. destroy on an inactive domain).',
  ),
  L(
    67,
    'CONFIG_UNSUPPORTED',
    'permanent',
    'The host cannot run this configuration (firmware, CPU mode, device).',
  ),
  L(73, 'INVALID_STREAM', 'permanent', 'A malformed stream reference.'),
  L(
    74,
    'ARGUMENT_UNSUPPORTED',
    'permanent',
    'A flag or argument this host does not support (callers fall back).',
  ),
  L(76, 'STORAGE_POOL_BUILT', 'permanent', 'The pool is already built.'),
  L(79, 'AUTH_CANCELLED', 'permanent', 'Authentication was cancelled.'),
  L(82, 'OVERFLOW', 'permanent', 'A value does not fit; the same input overflows again.'),
  L(
    84,
    'OPERATION_UNSUPPORTED',
    'permanent',
    'The operation is not supported by this host (callers fall back).',
  ),
  L(88, 'ACCESS_DENIED', 'permanent', "libvirt's access control denied the call."),
  L(
    90,
    'STORAGE_VOL_EXIST',
    'permanent',
    'A volume of that name already exists; kvm2 never writes over one it did not make.',
  ),
  L(92, 'XML_INVALID_SCHEMA', 'permanent', "The XML fails libvirt's schema (VALIDATE flag)."),
  L(
    94,
    'AUTH_UNAVAILABLE',
    'permanent',
    'No authentication method is available (no polkit agent).',
  ),
  L(110, 'MULTIPLE_DOMAINS', 'permanent', 'The name matches several domains.'),
  L(
    '*',
    'any other',
    'permanent',
    'The daemon answered with a definite refusal kvm2 does not know: the same call would get it again.',
  ),
];
