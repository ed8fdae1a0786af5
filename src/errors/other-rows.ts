// The failures under kvm2's own code: dials (src/libvirt/transport/dial-error.ts), Node.js and
// undici error codes, HTTP statuses of image servers, and JavaScript errors known by name, with
// the last resort. Part of the one classification table (src/errors/table.ts).
import type { ErrorKind } from './kind.js';
import type { DialRow, HttpRow, JsRow, NodeRow } from './rows.js';

const D = (match: string, kind: ErrorKind | 'derived', why: string): DialRow => ({
  source: 'dial',
  match,
  kind,
  why,
});
const N = (match: string, kind: ErrorKind, why: string): NodeRow => ({
  source: 'node',
  match,
  kind,
  why,
});
const H = (match: HttpRow['match'], kind: ErrorKind, why: string): HttpRow => ({
  source: 'http',
  match,
  kind,
  why,
});
const J = (match: string, kind: ErrorKind, why: string): JsRow => ({
  source: 'js',
  match,
  kind,
  why,
});

/**
 * A failed dial (SPEC §4): an unknown or changed host key and a refused authentication are
 * permanent, other dial failures transient. Looked up by `stage/reason`, then the reason at any
 * stage (written with `*` as the stage), then the stage.
 */
export const DIAL_ROWS: readonly DialRow[] = [
  D('resolve', 'transient', 'The host name did not resolve; DNS may answer on the next try.'),
  D('tcp', 'transient', 'TCP connect to sshd failed or timed out; the host may be rebooting.'),
  D('handshake', 'transient', 'The SSH handshake broke off or timed out.'),
  D(
    'hostkey',
    'transient',
    'The connection broke while the host key was checked (a refused key has its own rows).',
  ),
  D('auth', 'transient', 'The connection broke during authentication (a refusal has its own row).'),
  D(
    'forward',
    'transient',
    'The libvirt socket on the host refused the forward (daemon restarting).',
  ),
  D('socket', 'transient', 'The local libvirt socket is missing or refused the connect.'),
  D('open', 'transient', 'The link came up but opening libvirt timed out or broke off.'),
  D(
    'open/protocol_error',
    'derived',
    "Opening libvirt failed with an error of its own: that error's kind (a libvirt error keeps its row's, a broken frame is transient).",
  ),
  D(
    '*/host_key_unknown',
    'permanent',
    'The host key is not in known_hosts: a person must vouch for it.',
  ),
  D('*/host_key_mismatch', 'permanent', 'The host key changed: a possible attack, never retried.'),
  D(
    '*/auth_failed',
    'permanent',
    'sshd or libvirtd refused authentication (keys, AUTH_FAILED, ACCESS_DENIED, no supported auth type).',
  ),
  D(
    '*/key_unreadable',
    'transient',
    'The client key file could not be read or holds no key now (a rotation writing it, a mount away): it is read again at the next dial.',
  ),
  D(
    '*/known_hosts_unreadable',
    'transient',
    'The known_hosts file could not be read now, so the host key was neither vouched for nor refused: it is read again at the next dial.',
  ),
  D(
    '*/forward_prohibited',
    'permanent',
    'sshd refuses to forward to the socket ("administratively prohibited"): its configuration needs a person.',
  ),
];

/** A Node.js or undici error `code`, anywhere on the cause chain. */
export const NODE_ROWS: readonly NodeRow[] = [
  N('ECONNRESET', 'transient', 'The peer reset the connection.'),
  N('ECONNREFUSED', 'transient', 'Nothing listens there yet (service restarting).'),
  N('ECONNABORTED', 'transient', 'The connection was aborted locally.'),
  N('ETIMEDOUT', 'transient', 'A connect or read timed out.'),
  N('EPIPE', 'transient', 'Wrote to a connection the peer had closed.'),
  N('EHOSTUNREACH', 'transient', 'No route to the host right now.'),
  N('ENETUNREACH', 'transient', 'No route to the network right now.'),
  N('ENETDOWN', 'transient', 'The local network is down.'),
  N('EAI_AGAIN', 'transient', 'DNS lookup timed out or the resolver was busy.'),
  N(
    'ENOTFOUND',
    'transient',
    'DNS says no such name; kept transient like the dial stage `resolve` (SPEC §4), since split-horizon or flapping resolvers say so too, and attempts are bounded.',
  ),
  N('EMFILE', 'transient', 'This process is out of file descriptors; they free up.'),
  N('ENFILE', 'transient', 'The system is out of file descriptors; they free up.'),
  N('EBUSY', 'transient', 'A file or device is busy.'),
  N(
    'ERR_STREAM_PREMATURE_CLOSE',
    'transient',
    'A stream (download, upload) closed before its end.',
  ),
  N('UND_ERR_SOCKET', 'transient', 'undici: the socket failed mid-response.'),
  N('UND_ERR_CONNECT_TIMEOUT', 'transient', 'undici: connect phase timed out.'),
  N('UND_ERR_HEADERS_TIMEOUT', 'transient', 'undici: the server sent no headers in time.'),
  N('UND_ERR_BODY_TIMEOUT', 'transient', 'undici: the body stalled.'),
  N('ENOSPC', 'quota_exceeded', 'No space left on a local device.'),
  N('EDQUOT', 'quota_exceeded', 'A disk quota is exhausted.'),
  N('EACCES', 'permanent', 'File permissions refuse access; a person must fix them.'),
  N('EPERM', 'permanent', 'The operation is not permitted to this user.'),
  N('ENOENT', 'permanent', 'A file kvm2 was told to use (key, known_hosts) does not exist.'),
  N('CERT_HAS_EXPIRED', 'permanent', "The image server's TLS certificate expired."),
  N(
    'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    'permanent',
    "The image server's TLS chain is incomplete or untrusted.",
  ),
  N(
    'DEPTH_ZERO_SELF_SIGNED_CERT',
    'permanent',
    'The image server presents a self-signed certificate.',
  ),
  N('ERR_TLS_CERT_ALTNAME_INVALID', 'permanent', 'The certificate does not name the image server.'),
];

/** An image server's HTTP status: exact, or its range. */
export const HTTP_ROWS: readonly HttpRow[] = [
  H(404, 'permanent', 'The image URL names nothing.'),
  H(403, 'permanent', 'The image server forbids the download.'),
  H(410, 'permanent', 'The image is gone for good.'),
  H(401, 'permanent', 'The image server wants credentials kvm2 does not send.'),
  H(408, 'transient', 'The server timed out waiting for the request.'),
  H(429, 'transient', 'Rate limited: retry with backoff.'),
  H('5xx', 'transient', 'The server or a proxy failed; it may recover.'),
  H('4xx', 'permanent', 'Any other client error: the same request fails again.'),
  H('3xx', 'permanent', 'A redirect that was not followed (too many, or no Location).'),
];

/** Known by `name` only; `*` is the last resort. */
export const JS_ROWS: readonly JsRow[] = [
  J(
    'AbortError',
    'transient',
    'An AbortSignal fired (job cancelled, worker stopping): retry later, never a false state.',
  ),
  J(
    'TimeoutError',
    'transient',
    'AbortSignal.timeout() fired: the budget ran out, not the operation.',
  ),
  J(
    '*',
    'transient',
    'Anything unrecognised: attempts are bounded and every step is idempotent, so a retry costs little, while failing a transient blip at once loses the create.',
  ),
];
