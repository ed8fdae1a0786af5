// Errors for the classification tests, as kvm2 would meet them: one realistic error for each
// row of the error table, built the way the code builds it, and for the rows whose kind is
// derived, examples each with the kind it must get.
import type { ErrorKind } from '../../src/errors/kind.js';
import type { ErrorTableRow } from '../../src/errors/table.js';
import { VirErr } from '../../src/libvirt/error-codes.js';
import {
  CallAbortedError,
  InvalidArgumentError,
  LibvirtError,
  LinkClosedError,
  LinkInterruptedError,
  ProtocolError,
  StreamStalledError,
} from '../../src/libvirt/errors.js';
import { DialError } from '../../src/libvirt/transport/dial-error.js';
import { HostTable } from '../../src/libvirt/host-table.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { parseInstanceId } from '../../src/provider/core/ids.js';
import { CliError, InterruptedError, UsageError } from '../../cli/terminal/errors.js';
import { validateJob } from '../../queues/registry.js';
import { Kvm2Error, type FixedKindCode } from '../../src/errors/error.js';
import { XdrReader } from '../../src/libvirt/xdr.js';
import { parseCreateRequest } from '../../src/provider/core/request.js';
import { fileError } from '../../src/provider/image/local-file.js';
import { imageSource, networkError } from '../../src/provider/image/download.js';
import { ImageContentError } from '../../src/provider/image/fill.js';
import { buildSeed } from '../../src/provider/seed/seed.js';
import { partialViewError } from '../../src/provider/operations/list-by-tag.js';
import { readXml } from '../../src/provider/xml/types.js';
import { KeyBusyError } from '../../workers/locks/job-locks.js';
import { LockLostError } from '../../workers/locks/lock-lost-error.js';

const UID = '0b7e6f7c-3c1a-4d2e-9f00-5a6b7c8d9e0f';

/** How docs/errors.md writes a row's match. */
export function matchLabel(row: ErrorTableRow): string {
  if (row.source === 'libvirt') {
    if (row.match === '*') return 'any other code';
    return `${row.match} ${row.name}${row.int1 === undefined ? '' : `, int1 ${row.int1}`}`;
  }
  if (row.source === 'js' && row.match === '*') return 'anything else';
  return String(row.match);
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

/** A Node.js system error as net, dns or fs raise it. */
export function systemError(code: string, message: string, syscall = 'connect'): Error {
  return Object.assign(new Error(message), { code, errno: -1, syscall });
}

/** What undici's fetch throws: a TypeError whose cause has the code. */
function fetchFailed(code: string, message: string): Error {
  return new TypeError('fetch failed', { cause: Object.assign(new Error(message), { code }) });
}

const libvirtDomain: Partial<Record<number, number>> = { 42: 10, 49: 18, 50: 18, 90: 18, 39: 7 };

function libvirtError(row: Extract<ErrorTableRow, { source: 'libvirt' }>): LibvirtError {
  const code = row.match === '*' ? 9999 : row.match;
  return new LibvirtError(
    `libvirt error ${code}`,
    code,
    libvirtDomain[code] ?? 20,
    2,
    'DomainLookupByName',
    row.int1 ?? -1,
  );
}

// Each dial row's error as the transports build it (src/libvirt/transport/*.ts, connection.ts).
const dialErrors: Record<string, () => DialError> = {
  resolve: () =>
    new DialError('ssh hv1.internal:22: cannot resolve', 'resolve', 'hv1.internal', 'unreachable', {
      cause: systemError('ENOTFOUND', 'getaddrinfo ENOTFOUND hv1.internal', 'getaddrinfo'),
    }),
  tcp: () =>
    new DialError('ssh hv1:22: cannot connect', 'tcp', 'hv1', 'unreachable', {
      cause: systemError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:22'),
    }),
  handshake: () =>
    new DialError('ssh hv1:22: handshake failed', 'handshake', 'hv1', 'protocol_error', {
      cause: new Error('Connection lost before handshake'),
    }),
  hostkey: () =>
    new DialError(
      'ssh hv1:22: connection closed during hostkey',
      'hostkey',
      'hv1',
      'protocol_error',
    ),
  auth: () =>
    new DialError(
      'ssh hv1:22: connection failed during auth (ECONNRESET)',
      'auth',
      'hv1',
      'unreachable',
      {
        cause: systemError('ECONNRESET', 'read ECONNRESET', 'read'),
      },
    ),
  forward: () =>
    new DialError(
      'ssh hv1:22: cannot open /var/run/libvirt/libvirt-sock on the host (connect failed)',
      'forward',
      'hv1',
      'socket_unavailable',
      { cause: Object.assign(new Error('(SSH) Channel open failure: open failed'), { reason: 2 }) },
    ),
  socket: () =>
    new DialError('unix /run/x: cannot connect (ENOENT)', 'socket', 'local', 'socket_unavailable', {
      cause: systemError('ENOENT', 'connect ENOENT /run/x'),
    }),
  open: () => new DialError('hv1: opening libvirt failed: timed out', 'open', 'hv1', 'timeout'),
  '*/host_key_unknown': () =>
    new DialError('ssh hv1:22: host key not in known_hosts', 'hostkey', 'hv1', 'host_key_unknown'),
  '*/host_key_mismatch': () =>
    new DialError('ssh hv1:22: HOST KEY CHANGED', 'hostkey', 'hv1', 'host_key_mismatch'),
  '*/auth_failed': () =>
    new DialError('ssh hv1:22: authentication refused', 'auth', 'hv1', 'auth_failed', {
      cause: Object.assign(new Error('All configured authentication methods failed'), {
        level: 'client-authentication',
      }),
    }),
  '*/key_unreadable': () =>
    new DialError(
      'ssh hv1:22: cannot read key file /etc/kvm2/id_ed25519 (ENOENT)',
      'auth',
      'hv1',
      'key_unreadable',
    ),
  '*/known_hosts_unreadable': () =>
    new DialError(
      'ssh hv1:22: host key not checked (known_hosts /etc/kvm2/known_hosts unreadable: EACCES)',
      'hostkey',
      'hv1',
      'known_hosts_unreadable',
    ),
  '*/forward_prohibited': () =>
    new DialError(
      'ssh hv1:22: cannot open /var/run/libvirt/libvirt-sock on the host (administratively prohibited)',
      'forward',
      'hv1',
      'forward_prohibited',
      { cause: Object.assign(new Error('(SSH) Channel open failure: prohibited'), { reason: 1 }) },
    ),
};

const openFailed = (cause: unknown): DialError =>
  new DialError('hv1: opening libvirt failed', 'open', 'hv1', 'protocol_error', { cause });

/** Rows whose kind is derived: errors as the code builds them, each with the kind it must get. */
export const derivedExamples: Record<string, readonly (readonly [() => unknown, ErrorKind])[]> = {
  'dial open/protocol_error': [
    [() => openFailed(new ProtocolError('bad frame')), 'transient'],
    [
      () =>
        openFailed(
          new LibvirtError('no connection driver', VirErr.NO_CONNECT, 0, 2, 'ConnectOpen'),
        ),
      'transient',
    ],
    [
      () => openFailed(new LibvirtError('unsupported', VirErr.NO_SUPPORT, 0, 2, 'ConnectOpen')),
      'permanent',
    ],
    [() => openFailed(undefined), 'transient'],
  ],
  'kvm2 ERR_LIBVIRT': [
    [
      () => new LibvirtError('no domain', VirErr.NO_DOMAIN, 10, 2, 'DomainLookupByName'),
      'not_found',
    ],
    [
      () => new LibvirtError('no space', VirErr.SYSTEM_ERROR, 18, 2, 'StorageVolUpload', 28),
      'quota_exceeded',
    ],
  ],
  'kvm2 ERR_LIBVIRT_DIAL': [
    [dialErrors['*/auth_failed']!, 'permanent'],
    [dialErrors['tcp']!, 'transient'],
  ],
  'kvm2 ERR_IMAGE_HTTP': [
    [
      () => networkError(imageAt, systemError('ECONNRESET', 'read ECONNRESET', 'read'), live),
      'transient',
    ],
    [
      () => networkError(imageAt, fetchFailed('CERT_HAS_EXPIRED', 'certificate has expired'), live),
      'permanent',
    ],
    [() => networkError(imageAt, new Error('stopped'), AbortSignal.abort()), 'transient'],
  ],
  'kvm2 ERR_IMAGE_FILE': [
    [
      () => fileError('golden', '/srv/golden.qcow2', systemError('ENOENT', 'no such file', 'open')),
      'permanent',
    ],
    [
      () => fileError('golden', '/srv/golden.qcow2', systemError('EACCES', 'denied', 'open')),
      'permanent',
    ],
    [
      () => fileError('golden', '/srv/golden.qcow2', systemError('EIO', 'i/o error', 'read')),
      'transient',
    ],
  ],
  'kvm2 ERR_PARTIAL_VIEW': [
    [
      () =>
        partialViewError(
          'h1',
          new LibvirtError('denied', VirErr.ACCESS_DENIED, 0, 2, 'ConnectListAllDomains'),
        ),
      'permanent',
    ],
    [() => partialViewError('h1', new LinkInterruptedError('link died')), 'transient'],
  ],
};

const imageAt = imageSource('debian-12', {
  url: 'https://images.internal/x.qcow2',
  format: 'qcow2',
  maxSize: 20 * 2 ** 30,
  vendorData: [],
});
const live = new AbortController().signal;

const kvm2Errors: Record<string, () => unknown> = {
  ERR_LIBVIRT_CALL_TIMEOUT: () => new CallAbortedError('DomainCreateWithFlags', true),
  ERR_LIBVIRT_STREAM_STALLED: () => new StreamStalledError('StorageVolUpload', 60_000),
  ERR_LIBVIRT_CALL_ABORTED: () =>
    new CallAbortedError('DomainCreateWithFlags', false, { cause: AbortSignal.abort().reason }),
  ERR_LIBVIRT_INTERRUPTED: () => new LinkInterruptedError('the link to hv1 died'),
  ERR_LIBVIRT_PROTOCOL: () => new ProtocolError('packet length 12 is below the header'),
  ERR_LIBVIRT_CLOSED: () => new LinkClosedError('connection closed'),
  ERR_LIBVIRT_ARGUMENT: () => new InvalidArgumentError('string longer than 4194304'),
  ERR_XDR_DECODE: () => thrown(() => new XdrReader(Buffer.alloc(2)).uint()),
  ERR_LIBVIRT_URI: () => thrown(() => parseLibvirtUri('qemu+tls://hv1/system')),
  ERR_UNKNOWN_HOST: () => thrown(() => new HostTable([]).target('hv9')),
  ERR_CONFIG: () => thrown(() => parseConfig({ hosts: [] })),
  ERR_INVALID_INSTANCE_ID: () => thrown(() => parseInstanceId('hv1')),
  ERR_INVALID_REQUEST: () => thrown(() => parseCreateRequest({ name: 'Not A Name' })),
  ERR_XML_MALFORMED: () => thrown(() => readXml('<domain')),
  ERR_SEED_TOO_LARGE: () =>
    thrown(() => buildSeed({ uid: UID, name: 'vm1', userData: Buffer.alloc(17 * 1024 * 1024) })),
  ERR_INVALID_JOB: () => thrown(() => validateJob('create', { name: 'vm1' })),
  ERR_USAGE: () => new UsageError("unknown option '--nope'", 'create'),
  ERR_CLI_INPUT: () => new CliError('cannot read --user-data ud.yaml (ENOENT)'),
  ERR_INTERRUPTED: () => new InterruptedError('stopped waiting'),
  ERR_LOCK_LOST: () => new LockLostError('instance:h1/vm1', 'taken'),
  ERR_KEY_BUSY: () => new KeyBusyError('instance:h1/vm1'),
  ERR_IMAGE_CONTENT: () => new ImageContentError('image x.qcow2 is not qcow2'),
};

/**
 * The rest as Kvm2Error builds them; and every fixed row again as its code alone, the way a job's
 * failedReason or a result reads back from Redis (only the code survives).
 */
function kvm2Error(code: string): unknown {
  const build = kvm2Errors[code];
  if (build !== undefined) return build();
  return new Kvm2Error(code as FixedKindCode, `a ${code} as kvm2 throws it`);
}

const undiciOrTls = /^(UND_ERR_|CERT_|UNABLE_|DEPTH_|ERR_TLS_)/;

/** A realistic error for a row, as kvm2 would meet it. */
export function errorFor(row: ErrorTableRow): unknown {
  switch (row.source) {
    case 'libvirt':
      return libvirtError(row);
    case 'dial': {
      const build = dialErrors[row.match];
      if (build === undefined) throw new Error(`no test error for dial row ${row.match}`);
      return build();
    }
    case 'node':
      return undiciOrTls.test(row.match)
        ? fetchFailed(row.match, `${row.match} while fetching https://images.internal/x.qcow2`)
        : systemError(row.match, `${row.match}: from a socket or a file`);
    case 'http': {
      const status =
        typeof row.match === 'number'
          ? row.match
          : { '3xx': 300, '4xx': 400, '5xx': 503 }[row.match];
      return Object.assign(new Error(`GET https://images.internal/x.qcow2: HTTP ${status}`), {
        status,
      });
    }
    case 'kvm2':
      return kvm2Error(row.match);
    case 'js':
      if (row.match === 'AbortError') return AbortSignal.abort().reason;
      if (row.match === 'TimeoutError') {
        return new DOMException('The operation was aborted due to timeout', 'TimeoutError');
      }
      return new Error('something nobody planned for');
  }
}

/** A row as the expectations and the examples name it: its source, then its match. */
export const rowKey = (row: ErrorTableRow): string => `${row.source} ${matchLabel(row)}`;
