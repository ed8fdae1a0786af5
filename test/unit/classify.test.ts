import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  classifyError,
  dialErrorKind,
  httpStatusKind,
  libvirtErrorKind,
  nodeErrorKind,
} from '../../src/errors/classify.js';
import type { ErrorKind } from '../../src/errors/kind.js';
import { ERROR_TABLE, type ErrorTableRow } from '../../src/errors/table.js';
import { VirErr } from '../../src/libvirt/error-codes.js';
import {
  CallAbortedError,
  InvalidArgumentError,
  LibvirtError,
  LinkClosedError,
  LinkInterruptedError,
  ProtocolError,
} from '../../src/libvirt/errors.js';
import {
  DialError,
  type DialReason,
  type DialStage,
} from '../../src/libvirt/transport/dial-error.js';
import { HostTable } from '../../src/libvirt/host-table.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { parseInstanceId } from '../../src/provider/core/ids.js';
import { CliError, InterruptedError, UsageError } from '../../cli/terminal/errors.js';
import { validateJob } from '../../queues/registry.js';
import { Kvm2Error, type FixedKindCode } from '../../src/errors/error.js';
import { XdrReader } from '../../src/libvirt/xdr.js';
import { parseCreateRequest } from '../../src/provider/core/request.js';
import { imageSource, networkError } from '../../src/provider/image/download.js';
import { ImageContentError } from '../../src/provider/image/fill.js';
import { buildSeed } from '../../src/provider/seed/seed.js';
import { partialViewError } from '../../src/provider/operations/list-by-tag.js';
import { readXml } from '../../src/provider/xml/types.js';
import { KeyBusyError } from '../../workers/locks/job-locks.js';
import { LockLostError } from '../../workers/locks/lock-lost-error.js';
import { markdownTable } from '../harness/markdown.js';

const UID = '0b7e6f7c-3c1a-4d2e-9f00-5a6b7c8d9e0f';

/** How docs/errors.md writes a row's match. */
function matchLabel(row: ErrorTableRow): string {
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
function systemError(code: string, message: string, syscall = 'connect'): Error {
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
const derivedExamples: Record<string, readonly (readonly [() => unknown, ErrorKind])[]> = {
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
});
const live = new AbortController().signal;

const kvm2Errors: Record<string, () => unknown> = {
  ERR_LIBVIRT_CALL_TIMEOUT: () => new CallAbortedError('DomainCreateWithFlags', true),
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
function errorFor(row: ErrorTableRow): unknown {
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

/**
 * What each row must answer, written from what the code means (libvirt's virerror.h and the
 * messages virterror.c gives each code, Node's and undici's error docs, RFC 9110 for HTTP),
 * not read from ERROR_TABLE: a row whose kind is changed by mistake fails against this.
 */
const EXPECTED_KIND: Readonly<Record<string, ErrorKind | 'derived'>> = {
  // libvirt "no such object": the thing is gone.
  'libvirt 42 NO_DOMAIN': 'not_found',
  'libvirt 50 NO_STORAGE_VOL': 'not_found',
  'libvirt 49 NO_STORAGE_POOL': 'not_found',
  'libvirt 43 NO_NETWORK': 'not_found',
  'libvirt 80 NO_DOMAIN_METADATA': 'not_found',
  'libvirt 66 NO_SECRET': 'not_found',
  'libvirt 72 NO_DOMAIN_SNAPSHOT': 'not_found',
  // The daemon or its link in trouble, or an operation that may go through next time.
  'libvirt 1 INTERNAL_ERROR': 'transient',
  'libvirt 2 NO_MEMORY': 'transient',
  'libvirt 5 NO_CONNECT': 'transient',
  'libvirt 6 INVALID_CONN': 'transient',
  'libvirt 9 OPERATION_FAILED': 'transient',
  'libvirt 39 RPC': 'transient',
  'libvirt 68 OPERATION_TIMEOUT': 'transient',
  'libvirt 78 OPERATION_ABORTED': 'transient',
  'libvirt 86 AGENT_UNRESPONSIVE': 'transient',
  'libvirt 87 RESOURCE_BUSY': 'transient',
  // A system call failed on the host: by its errno (ENOSPC 28, EDQUOT 122: out of space;
  // EACCES 13: refused, and will be again), any other errno may pass.
  'libvirt 38 SYSTEM_ERROR, int1 28': 'quota_exceeded',
  'libvirt 38 SYSTEM_ERROR, int1 122': 'quota_exceeded',
  'libvirt 38 SYSTEM_ERROR, int1 13': 'permanent',
  'libvirt 38 SYSTEM_ERROR': 'transient',
  // The request itself is wrong, refused, unsupported or in conflict: asking again is the same.
  'libvirt 3 NO_SUPPORT': 'permanent',
  'libvirt 7 INVALID_DOMAIN': 'permanent',
  'libvirt 8 INVALID_ARG': 'permanent',
  'libvirt 27 XML_ERROR': 'permanent',
  'libvirt 28 DOM_EXIST': 'permanent',
  'libvirt 29 OPERATION_DENIED': 'permanent',
  'libvirt 37 NETWORK_EXIST': 'permanent',
  'libvirt 45 AUTH_FAILED': 'permanent',
  'libvirt 46 INVALID_STORAGE_POOL': 'permanent',
  'libvirt 47 INVALID_STORAGE_VOL': 'permanent',
  'libvirt 55 OPERATION_INVALID': 'permanent',
  'libvirt 67 CONFIG_UNSUPPORTED': 'permanent',
  'libvirt 73 INVALID_STREAM': 'permanent',
  'libvirt 74 ARGUMENT_UNSUPPORTED': 'permanent',
  'libvirt 76 STORAGE_POOL_BUILT': 'permanent',
  'libvirt 79 AUTH_CANCELLED': 'permanent',
  'libvirt 82 OVERFLOW': 'permanent',
  'libvirt 84 OPERATION_UNSUPPORTED': 'permanent',
  'libvirt 88 ACCESS_DENIED': 'permanent',
  'libvirt 90 STORAGE_VOL_EXIST': 'permanent',
  'libvirt 92 XML_INVALID_SCHEMA': 'permanent',
  'libvirt 94 AUTH_UNAVAILABLE': 'permanent',
  'libvirt 110 MULTIPLE_DOMAINS': 'permanent',
  'libvirt any other code': 'permanent',
  // Dialing: the network may come back; a host key or a credential will not change by itself.
  'dial resolve': 'transient',
  'dial tcp': 'transient',
  'dial handshake': 'transient',
  'dial hostkey': 'transient',
  'dial auth': 'transient',
  'dial forward': 'transient',
  'dial socket': 'transient',
  'dial open': 'transient',
  'dial open/protocol_error': 'derived',
  'dial */host_key_unknown': 'permanent',
  'dial */host_key_mismatch': 'permanent',
  'dial */auth_failed': 'permanent',
  'dial */forward_prohibited': 'permanent',
  // Node and undici: sockets that broke or could not be had are passing; a full disk is out
  // of space; refused access, a missing file and a bad certificate stay so.
  'node ECONNRESET': 'transient',
  'node ECONNREFUSED': 'transient',
  'node ECONNABORTED': 'transient',
  'node ETIMEDOUT': 'transient',
  'node EPIPE': 'transient',
  'node EHOSTUNREACH': 'transient',
  'node ENETUNREACH': 'transient',
  'node ENETDOWN': 'transient',
  'node EAI_AGAIN': 'transient',
  'node ENOTFOUND': 'transient',
  'node EMFILE': 'transient',
  'node ENFILE': 'transient',
  'node EBUSY': 'transient',
  'node ERR_STREAM_PREMATURE_CLOSE': 'transient',
  'node UND_ERR_SOCKET': 'transient',
  'node UND_ERR_CONNECT_TIMEOUT': 'transient',
  'node UND_ERR_HEADERS_TIMEOUT': 'transient',
  'node UND_ERR_BODY_TIMEOUT': 'transient',
  'node ENOSPC': 'quota_exceeded',
  'node EDQUOT': 'quota_exceeded',
  'node EACCES': 'permanent',
  'node EPERM': 'permanent',
  'node ENOENT': 'permanent',
  'node CERT_HAS_EXPIRED': 'permanent',
  'node UNABLE_TO_VERIFY_LEAF_SIGNATURE': 'permanent',
  'node DEPTH_ZERO_SELF_SIGNED_CERT': 'permanent',
  'node ERR_TLS_CERT_ALTNAME_INVALID': 'permanent',
  // HTTP (RFC 9110): 408 and 429 invite a retry, as does a server error; other client errors
  // and a redirect that was not followed do not change on their own.
  'http 404': 'permanent',
  'http 403': 'permanent',
  'http 410': 'permanent',
  'http 401': 'permanent',
  'http 408': 'transient',
  'http 429': 'transient',
  'http 5xx': 'transient',
  'http 4xx': 'permanent',
  'http 3xx': 'permanent',
  // kvm2's own: the link or the call cut short may work next time; bad input, a foreign
  // object and a broken image do not; a full pool is out of space.
  'kvm2 ERR_LIBVIRT': 'derived',
  'kvm2 ERR_LIBVIRT_DIAL': 'derived',
  'kvm2 ERR_LIBVIRT_CALL_TIMEOUT': 'transient',
  'kvm2 ERR_LIBVIRT_CALL_ABORTED': 'transient',
  'kvm2 ERR_LIBVIRT_INTERRUPTED': 'transient',
  'kvm2 ERR_LIBVIRT_PROTOCOL': 'transient',
  'kvm2 ERR_LIBVIRT_CLOSED': 'transient',
  'kvm2 ERR_LIBVIRT_ARGUMENT': 'permanent',
  'kvm2 ERR_XDR_DECODE': 'transient',
  'kvm2 ERR_LIBVIRT_URI': 'permanent',
  'kvm2 ERR_UNKNOWN_HOST': 'permanent',
  'kvm2 ERR_CONFIG': 'permanent',
  'kvm2 ERR_INVALID_INSTANCE_ID': 'permanent',
  'kvm2 ERR_INVALID_REQUEST': 'permanent',
  'kvm2 ERR_UNKNOWN_IMAGE': 'permanent',
  'kvm2 ERR_NO_HOST_IN_ZONE': 'permanent',
  'kvm2 ERR_XML_INVALID_SPEC': 'permanent',
  'kvm2 ERR_XML_MALFORMED': 'permanent',
  'kvm2 ERR_XML_METADATA_MALFORMED': 'permanent',
  'kvm2 ERR_SEED_FILE_NAME': 'permanent',
  'kvm2 ERR_SEED_TOO_LARGE': 'permanent',
  'kvm2 ERR_SEED_INVALID': 'permanent',
  'kvm2 ERR_SEED_BOUNDARY_IN_CONTENT': 'permanent',
  'kvm2 ERR_IMAGE_HTTP': 'derived',
  'kvm2 ERR_IMAGE_EMPTY': 'permanent',
  'kvm2 ERR_IMAGE_DIGEST_MISMATCH': 'permanent',
  'kvm2 ERR_IMAGE_CONTENT': 'permanent',
  'kvm2 ERR_LOCK_BUSY': 'transient',
  'kvm2 ERR_DOMAIN_DIED': 'transient',
  'kvm2 ERR_SERIAL_LOG': 'permanent',
  'kvm2 ERR_DOMAIN_NOT_RUNNING': 'permanent',
  'kvm2 ERR_FOREIGN_DOMAIN': 'permanent',
  'kvm2 ERR_UID_CONFLICT': 'permanent',
  'kvm2 ERR_FOREIGN_VOLUME': 'permanent',
  'kvm2 ERR_POOL_FULL': 'quota_exceeded',
  'kvm2 ERR_NOT_FOUND': 'not_found',
  'kvm2 ERR_HOST_OBJECT_MISSING': 'permanent',
  'kvm2 ERR_HOST_OBJECT_VANISHED': 'transient',
  'kvm2 ERR_PARTIAL_VIEW': 'derived',
  // The queue side: bad job data and a reused uid stay bad; Redis and waiting may pass.
  'kvm2 ERR_INVALID_JOB': 'permanent',
  'kvm2 ERR_UID_REUSED': 'permanent',
  'kvm2 ERR_ZONE_UNRESOLVED': 'permanent',
  'kvm2 ERR_ZONE_UNAVAILABLE': 'transient',
  'kvm2 ERR_REDIS_UNAVAILABLE': 'transient',
  'kvm2 ERR_CLIENT_CLOSED': 'permanent',
  'kvm2 ERR_WAIT_TIMEOUT': 'transient',
  // The worker runtime: a lost or busy lock and a stalled job are handed on, not failed.
  'kvm2 ERR_LOCK_LOST': 'transient',
  'kvm2 ERR_KEY_BUSY': 'transient',
  'kvm2 ERR_JOB_STALLED': 'transient',
  // The command line.
  'kvm2 ERR_USAGE': 'permanent',
  'kvm2 ERR_CLI_INPUT': 'permanent',
  'kvm2 ERR_INTERRUPTED': 'transient',
  // Cancellation and timeouts of our own signals are never a verdict on the work.
  'js AbortError': 'transient',
  'js TimeoutError': 'transient',
  'js anything else': 'transient',
};

const rowKey = (row: ErrorTableRow): string => `${row.source} ${matchLabel(row)}`;

describe('the classification table', () => {
  it('has at least 30 rows, each with a why', () => {
    expect(ERROR_TABLE.length).toBeGreaterThanOrEqual(30);
    for (const row of ERROR_TABLE) expect(row.why.length, matchLabel(row)).toBeGreaterThan(10);
  });

  it('has an independent expectation for every row, and no expectation without a row', () => {
    expect(ERROR_TABLE.map(rowKey).sort()).toEqual(Object.keys(EXPECTED_KIND).sort());
  });

  it('names no match twice', () => {
    const keys = ERROR_TABLE.map((r) => `${r.source} ${matchLabel(r)}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('names libvirt codes as VirErr does', () => {
    const virErr: Readonly<Record<string, number>> = VirErr;
    for (const row of ERROR_TABLE) {
      if (row.source !== 'libvirt' || row.match === '*') continue;
      expect(virErr[row.name], row.name).toBe(row.match);
    }
  });

  it('is what docs/errors.md shows, row for row', async () => {
    const doc = await readFile(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    expect(markdownTable(doc, '## The table')).toEqual(
      ERROR_TABLE.map((r) => [r.source, matchLabel(r), r.kind, r.why]),
    );
  });
});

describe('classifyError, one test per row', () => {
  for (const row of ERROR_TABLE) {
    const expected = EXPECTED_KIND[rowKey(row)];
    it(`${rowKey(row)} is ${expected ?? '(no expectation)'}`, () => {
      expect(row.kind).toBe(expected);
      if (expected === 'derived' || expected === undefined) {
        const examples = derivedExamples[rowKey(row)] ?? [];
        expect(examples.length, 'examples of a derived row').toBeGreaterThanOrEqual(2);
        for (const [build, kind] of examples) {
          const err = build();
          expect(classifyError(err)).toBe(kind);
          expect((err as Kvm2Error).kind).toBe(kind);
          if (row.source === 'kvm2') expect((err as Kvm2Error).code).toBe(row.match);
        }
        return;
      }
      const err = errorFor(row);
      expect(classifyError(err)).toBe(expected);
      if (row.source === 'libvirt') expect((err as LibvirtError).kind).toBe(expected);
      if (row.source === 'dial') expect((err as DialError).kind).toBe(expected);
      if (row.source === 'kvm2') {
        expect(err).toBeInstanceOf(Kvm2Error);
        expect((err as Kvm2Error).code).toBe(row.match);
        expect((err as Kvm2Error).kind).toBe(expected);
        expect(classifyError({ code: row.match })).toBe(expected);
      }
    });
  }
});

describe('classifyError', () => {
  it('walks the cause chain to a Node code', () => {
    const err = new Error('download failed', {
      cause: new TypeError('fetch failed', { cause: systemError('ECONNRESET', 'read ECONNRESET') }),
    });
    expect(classifyError(err)).toBe('transient');
    const full = new Error('upload failed', {
      cause: systemError('ENOSPC', 'write ENOSPC', 'write'),
    });
    expect(classifyError(full)).toBe('quota_exceeded');
  });

  it('lets an error that carries a kind keep it, whatever its cause says', () => {
    const err = new Kvm2Error('ERR_FOREIGN_VOLUME', 'not ours', {
      cause: systemError('ENOSPC', 'nope'),
    });
    expect(classifyError(err)).toBe('permanent');
  });

  it('takes a libvirt error kind from the table, even revived as a plain object', () => {
    expect(classifyError({ code: 'ERR_LIBVIRT', libvirtCode: 42, kind: 'transient' })).toBe(
      'not_found',
    );
    expect(classifyError({ code: 'ERR_LIBVIRT', libvirtCode: 38, int1: 28 })).toBe(
      'quota_exceeded',
    );
  });

  it('reads SYSTEM_ERROR by its errno: ENOSPC is quota, an unlisted errno transient', () => {
    expect(libvirtErrorKind(VirErr.SYSTEM_ERROR, 28)).toBe('quota_exceeded');
    expect(libvirtErrorKind(VirErr.SYSTEM_ERROR, 5)).toBe('transient');
    expect(libvirtErrorKind(VirErr.SYSTEM_ERROR)).toBe('transient');
    // int1 means nothing for other codes
    expect(libvirtErrorKind(VirErr.NO_DOMAIN, 28)).toBe('not_found');
    expect(libvirtErrorKind(12345)).toBe('permanent');
  });

  it('looks a kind-less dial error up by stage/reason, then reason, then stage', () => {
    const dial = (stage: DialStage, reason: DialReason): unknown => ({
      code: 'ERR_LIBVIRT_DIAL',
      stage,
      reason,
    });
    expect(classifyError(dial('open', 'auth_failed'))).toBe('permanent');
    expect(classifyError(dial('hostkey', 'timeout'))).toBe('transient');
    expect(classifyError(dial('hostkey', 'host_key_unknown'))).toBe('permanent');
    expect(dialErrorKind('forward')).toBe('transient');
    expect(dialErrorKind('nonsense')).toBe('transient');
  });

  // The table once said permanent here (the stage row `auth`) while the transport, overriding
  // it, made such a dial transient: a connection lost during auth is no refused credential.
  it('gives a dial its table kind, with no override left in the transports', () => {
    expect(new DialError('lost', 'auth', 'hv1', 'unreachable').kind).toBe('transient');
    expect(classifyError({ code: 'ERR_LIBVIRT_DIAL', stage: 'auth', reason: 'unreachable' })).toBe(
      'transient',
    );
    expect(new DialError('closed', 'auth', 'hv1', 'protocol_error').kind).toBe('transient');
    expect(new DialError('refused', 'auth', 'hv1', 'auth_failed').kind).toBe('permanent');
  });

  it('prefers an exact HTTP status to its range', () => {
    expect(httpStatusKind(429)).toBe('transient');
    expect(httpStatusKind(418)).toBe('permanent');
    expect(httpStatusKind(200)).toBeUndefined();
    expect(classifyError({ statusCode: 502 })).toBe('transient');
  });

  it('reads the errors of an AggregateError (happy eyeballs)', () => {
    const err = new AggregateError(
      [
        systemError('ECONNREFUSED', 'connect ECONNREFUSED ::1:22'),
        systemError('ECONNREFUSED', 'x'),
      ],
      'connect failed',
    );
    expect(classifyError(err)).toBe('transient');
    expect(nodeErrorKind('ECONNREFUSED')).toBe('transient');
  });

  it('is transient for anything unrecognised, thrown values that are not errors too', () => {
    const unknowns: unknown[] = ['a string', undefined, null, 42, {}, new RangeError('odd')];
    const kinds = unknowns.map((v) => classifyError(v));
    expect(kinds).toEqual(unknowns.map((): ErrorKind => 'transient'));
  });

  it('does not hang on a cause cycle', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    Object.defineProperty(a, 'cause', { value: b });
    expect(classifyError(a)).toBe('transient');
  });

  it('treats a real AbortSignal.timeout reason as transient', async () => {
    const signal = AbortSignal.timeout(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((signal.reason as Error).name).toBe('TimeoutError');
    expect(classifyError(signal.reason)).toBe('transient');
  });
});
