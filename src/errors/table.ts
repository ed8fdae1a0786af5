// The one classification table (SPEC §3): every failure kvm2 can meet, by where it comes from,
// to the kind the queue layer acts on. Data only; the lookups are in src/libvirt/error-codes.ts
// (libvirt rows) and src/errors/classify.ts (the rest). docs/errors.md renders it, and a test keeps
// the two equal, so change both together.
import type { ErrorKind } from './kind.js';

interface RowBase {
  readonly kind: ErrorKind;
  /** One sentence an operator reads in docs/errors.md. */
  readonly why: string;
}

/** A `remote_error` from libvirtd: its virErrorNumber, and the errno in int1 where it matters. */
export interface LibvirtRow extends RowBase {
  readonly source: 'libvirt';
  /** virErrorNumber, or '*' for a code no other row names. */
  readonly match: number | '*';
  /** The VIR_ERR_ name without its prefix (checked against VirErr by a test). */
  readonly name: string;
  /** errno carried in int1 (SYSTEM_ERROR); a row with it wins over the row without. */
  readonly int1?: number;
}

/**
 * A failed dial: `stage/reason`, then the reason at any stage (written with `*` as stage),
 * then `stage` alone.
 * Stages and reasons are src/libvirt/errors.ts's DialStage and DialReason.
 */
export interface DialRow extends RowBase {
  readonly source: 'dial';
  readonly match: string;
}

/** A Node.js (or undici) error `code` anywhere on the `cause` chain. */
export interface NodeRow extends RowBase {
  readonly source: 'node';
  readonly match: string;
}

/** An HTTP status from an image server: exact, or a range written `4xx`. */
export interface HttpRow extends RowBase {
  readonly source: 'http';
  readonly match: number | '3xx' | '4xx' | '5xx';
}

/** kvm2's own error codes (`ERR_…`). */
export interface Kvm2Row extends RowBase {
  readonly source: 'kvm2';
  readonly match: string;
}

/** A JavaScript error recognised only by its `name`; `*` is the last resort. */
export interface JsRow extends RowBase {
  readonly source: 'js';
  readonly match: string;
}

export type ErrorTableRow = LibvirtRow | DialRow | NodeRow | HttpRow | Kvm2Row | JsRow;
export type ErrorSource = ErrorTableRow['source'];

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

const rows: ErrorTableRow[] = [
  // libvirt: virErrorNumber (include/libvirt/virterror.h, 9.0.0).
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

  // Dial stages (src/libvirt/errors.ts DialStage/DialReason). A DialError carries its kind.
  {
    source: 'dial',
    match: 'resolve',
    kind: 'transient',
    why: 'The host name did not resolve; DNS may answer on the next try.',
  },
  {
    source: 'dial',
    match: 'tcp',
    kind: 'transient',
    why: 'TCP connect to sshd failed or timed out; the host may be rebooting.',
  },
  {
    source: 'dial',
    match: 'handshake',
    kind: 'transient',
    why: 'The SSH handshake broke off before the host key.',
  },
  {
    source: 'dial',
    match: 'hostkey/host_key_unknown',
    kind: 'permanent',
    why: 'The host key is not in known_hosts: a person must vouch for it.',
  },
  {
    source: 'dial',
    match: 'hostkey/host_key_mismatch',
    kind: 'permanent',
    why: 'The host key changed: a possible attack, never retried.',
  },
  { source: 'dial', match: 'hostkey', kind: 'permanent', why: 'The host key was refused.' },
  {
    source: 'dial',
    match: 'auth',
    kind: 'permanent',
    why: 'sshd refused the key or agent identities.',
  },
  {
    source: 'dial',
    match: 'forward',
    kind: 'transient',
    why: 'The libvirt socket on the host refused the forward (daemon restarting); "administratively prohibited" is marked permanent by the transport.',
  },
  {
    source: 'dial',
    match: 'socket',
    kind: 'transient',
    why: 'The local libvirt socket is missing or refused the connect.',
  },
  {
    source: 'dial',
    match: 'open/auth_failed',
    kind: 'permanent',
    why: 'libvirtd refused authentication (AUTH_FAILED, ACCESS_DENIED, no supported auth type).',
  },
  {
    source: 'dial',
    match: 'open',
    kind: 'transient',
    why: "The link came up but opening libvirt failed; a libvirt error as cause keeps its own row's kind, anything else (timeout, protocol) is transient.",
  },
  {
    source: 'dial',
    match: '*/timeout',
    kind: 'transient',
    why: 'The dial ran out of its budget, whatever stage it was in.',
  },
  {
    source: 'dial',
    match: '*/aborted',
    kind: 'transient',
    why: "The caller's signal fired during the dial.",
  },

  // Node.js and undici error codes, found anywhere on the cause chain.
  {
    source: 'node',
    match: 'ECONNRESET',
    kind: 'transient',
    why: 'The peer reset the connection.',
  },
  {
    source: 'node',
    match: 'ECONNREFUSED',
    kind: 'transient',
    why: 'Nothing listens there yet (service restarting).',
  },
  {
    source: 'node',
    match: 'ECONNABORTED',
    kind: 'transient',
    why: 'The connection was aborted locally.',
  },
  {
    source: 'node',
    match: 'ETIMEDOUT',
    kind: 'transient',
    why: 'A connect or read timed out.',
  },
  {
    source: 'node',
    match: 'EPIPE',
    kind: 'transient',
    why: 'Wrote to a connection the peer had closed.',
  },
  {
    source: 'node',
    match: 'EHOSTUNREACH',
    kind: 'transient',
    why: 'No route to the host right now.',
  },
  {
    source: 'node',
    match: 'ENETUNREACH',
    kind: 'transient',
    why: 'No route to the network right now.',
  },
  { source: 'node', match: 'ENETDOWN', kind: 'transient', why: 'The local network is down.' },
  {
    source: 'node',
    match: 'EAI_AGAIN',
    kind: 'transient',
    why: 'DNS lookup timed out or the resolver was busy.',
  },
  {
    source: 'node',
    match: 'ENOTFOUND',
    kind: 'transient',
    why: 'DNS says no such name; kept transient like the dial stage `resolve` (SPEC §4), since split-horizon or flapping resolvers say so too, and attempts are bounded.',
  },
  {
    source: 'node',
    match: 'EMFILE',
    kind: 'transient',
    why: 'This process is out of file descriptors; they free up.',
  },
  {
    source: 'node',
    match: 'ENFILE',
    kind: 'transient',
    why: 'The system is out of file descriptors; they free up.',
  },
  { source: 'node', match: 'EBUSY', kind: 'transient', why: 'A file or device is busy.' },
  {
    source: 'node',
    match: 'ERR_STREAM_PREMATURE_CLOSE',
    kind: 'transient',
    why: 'A stream (download, upload) closed before its end.',
  },
  {
    source: 'node',
    match: 'UND_ERR_SOCKET',
    kind: 'transient',
    why: 'undici: the socket failed mid-response.',
  },
  {
    source: 'node',
    match: 'UND_ERR_CONNECT_TIMEOUT',
    kind: 'transient',
    why: 'undici: connect phase timed out.',
  },
  {
    source: 'node',
    match: 'UND_ERR_HEADERS_TIMEOUT',
    kind: 'transient',
    why: 'undici: the server sent no headers in time.',
  },
  {
    source: 'node',
    match: 'UND_ERR_BODY_TIMEOUT',
    kind: 'transient',
    why: 'undici: the body stalled.',
  },
  {
    source: 'node',
    match: 'ENOSPC',
    kind: 'quota_exceeded',
    why: 'No space left on a local device.',
  },
  {
    source: 'node',
    match: 'EDQUOT',
    kind: 'quota_exceeded',
    why: 'A disk quota is exhausted.',
  },
  {
    source: 'node',
    match: 'EACCES',
    kind: 'permanent',
    why: 'File permissions refuse access; a person must fix them.',
  },
  {
    source: 'node',
    match: 'EPERM',
    kind: 'permanent',
    why: 'The operation is not permitted to this user.',
  },
  {
    source: 'node',
    match: 'ENOENT',
    kind: 'permanent',
    why: 'A file kvm2 was told to use (key, known_hosts) does not exist.',
  },
  {
    source: 'node',
    match: 'CERT_HAS_EXPIRED',
    kind: 'permanent',
    why: "The image server's TLS certificate expired.",
  },
  {
    source: 'node',
    match: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    kind: 'permanent',
    why: "The image server's TLS chain is incomplete or untrusted.",
  },
  {
    source: 'node',
    match: 'DEPTH_ZERO_SELF_SIGNED_CERT',
    kind: 'permanent',
    why: 'The image server presents a self-signed certificate.',
  },
  {
    source: 'node',
    match: 'ERR_TLS_CERT_ALTNAME_INVALID',
    kind: 'permanent',
    why: 'The certificate does not name the image server.',
  },

  // HTTP statuses of image servers (SPEC §5). An exact status wins over its range.
  { source: 'http', match: 404, kind: 'permanent', why: 'The image URL names nothing.' },
  {
    source: 'http',
    match: 403,
    kind: 'permanent',
    why: 'The image server forbids the download.',
  },
  { source: 'http', match: 410, kind: 'permanent', why: 'The image is gone for good.' },
  {
    source: 'http',
    match: 401,
    kind: 'permanent',
    why: 'The image server wants credentials kvm2 does not send.',
  },
  {
    source: 'http',
    match: 408,
    kind: 'transient',
    why: 'The server timed out waiting for the request.',
  },
  { source: 'http', match: 429, kind: 'transient', why: 'Rate limited: retry with backoff.' },
  {
    source: 'http',
    match: '5xx',
    kind: 'transient',
    why: 'The server or a proxy failed; it may recover.',
  },
  {
    source: 'http',
    match: '4xx',
    kind: 'permanent',
    why: 'Any other client error: the same request fails again.',
  },
  {
    source: 'http',
    match: '3xx',
    kind: 'permanent',
    why: 'A redirect that was not followed (too many, or no Location).',
  },

  // kvm2's own codes. Errors of these classes carry their kind; the rows say which.
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_CALL_TIMEOUT',
    kind: 'transient',
    why: 'A libvirt call outlived its budget; its link was killed and the next call redials.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_CALL_ABORTED',
    kind: 'transient',
    why: "The caller's signal fired (cancellation, shutdown); never a false state.",
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_INTERRUPTED',
    kind: 'transient',
    why: 'The link under the call died; the call may or may not have run, and every step is idempotent.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_PROTOCOL',
    kind: 'transient',
    why: 'The peer broke the wire protocol; a fresh link usually works.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_CLOSED',
    kind: 'transient',
    why: 'kvm2 closed the connection (shutdown) under the call.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_ARGUMENT',
    kind: 'permanent',
    why: 'Arguments do not fit the procedure (a string over its limit).',
  },
  {
    source: 'kvm2',
    match: 'ERR_LIBVIRT_URI',
    kind: 'permanent',
    why: 'A libvirt URI kvm2 cannot use.',
  },
  {
    source: 'kvm2',
    match: 'ERR_UNKNOWN_HOST',
    kind: 'permanent',
    why: 'The job names a host that is not configured.',
  },
  {
    source: 'kvm2',
    match: 'ERR_CONFIG',
    kind: 'permanent',
    why: 'The configuration is invalid.',
  },
  {
    source: 'kvm2',
    match: 'ERR_INVALID_INSTANCE_ID',
    kind: 'permanent',
    why: 'An instance id that is not two DNS labels joined by a slash (host/name).',
  },
  {
    source: 'kvm2',
    match: 'ERR_IMAGE_EMPTY',
    kind: 'permanent',
    why: 'The image server answered Content-Length: 0.',
  },
  {
    source: 'kvm2',
    match: 'ERR_IMAGE_DIGEST_MISMATCH',
    kind: 'permanent',
    why: 'The downloaded image does not match its configured sha256.',
  },
  {
    source: 'kvm2',
    match: 'ERR_IMAGE_CONTENT',
    kind: 'permanent',
    why: 'The downloaded bytes are not an image of the configured format, or a qcow2 names a backing file.',
  },
  {
    source: 'kvm2',
    match: 'ERR_LOCK_LOST',
    kind: 'transient',
    why: "The instance's Redis lock could not be renewed: the work is abandoned and retried by whoever holds the lock next.",
  },
  {
    source: 'kvm2',
    match: 'ERR_DOMAIN_DIED',
    kind: 'transient',
    why: "The domain stopped or paused right after start (libvirt's state and reason in the message).",
  },
  {
    source: 'kvm2',
    match: 'ERR_SERIAL_LOG',
    kind: 'permanent',
    why: "libvirt cannot open the serial log file in the host's serialLogDir (missing or unwritable): a setting to fix, not a fault to retry; the instance is removed.",
  },
  {
    source: 'kvm2',
    match: 'ERR_DOMAIN_NOT_RUNNING',
    kind: 'permanent',
    why: "The domain was paused or suspended before kvm2 started it: an administrator's doing.",
  },
  {
    source: 'kvm2',
    match: 'ERR_FOREIGN_DOMAIN',
    kind: 'permanent',
    why: 'A domain of that name has no kvm2 metadata: kvm2 never touches it.',
  },
  {
    source: 'kvm2',
    match: 'ERR_UID_CONFLICT',
    kind: 'permanent',
    why: 'The instance belongs to another create (another uid).',
  },
  {
    source: 'kvm2',
    match: 'ERR_FOREIGN_VOLUME',
    kind: 'permanent',
    why: 'The overlay volume exists but is not backed by the requested image: never overwritten.',
  },
  {
    source: 'kvm2',
    match: 'ERR_POOL_FULL',
    kind: 'quota_exceeded',
    why: 'The pool has less free space than the image and seed need.',
  },

  // Recognised by name only, and the last resort.
  {
    source: 'js',
    match: 'AbortError',
    kind: 'transient',
    why: 'An AbortSignal fired (job cancelled, worker stopping): retry later, never a false state.',
  },
  {
    source: 'js',
    match: 'TimeoutError',
    kind: 'transient',
    why: 'AbortSignal.timeout() fired: the budget ran out, not the operation.',
  },
  {
    source: 'js',
    match: '*',
    kind: 'transient',
    why: 'Anything unrecognised: attempts are bounded and every step is idempotent, so a retry costs little, while failing a transient blip at once loses the create.',
  },
];

/** Frozen, rows too: the table is the contract, nothing may edit it at run time. */
export const ERROR_TABLE: readonly ErrorTableRow[] = Object.freeze(
  rows.map((row) => Object.freeze(row)),
);
