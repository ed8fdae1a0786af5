// The error table against expectations written independently of it: its rows one by one,
// each classified from a realistic error of its kind, and docs/errors.md row for row.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { classifyError } from '../../src/errors/classify.js';
import { Kvm2Error } from '../../src/errors/error.js';
import type { ErrorKind } from '../../src/errors/kind.js';
import { ERROR_TABLE } from '../../src/errors/table.js';
import { VirErr } from '../../src/libvirt/error-codes.js';
import { LibvirtError } from '../../src/libvirt/errors.js';
import { DialError } from '../../src/libvirt/transport/dial-error.js';
import { derivedExamples, errorFor, matchLabel, rowKey } from '../harness/error-examples.js';
import { markdownTable } from '../harness/markdown.js';

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
  // A file mid-rotation is read again at the next dial; only the server's verdict is final.
  'dial */key_unreadable': 'transient',
  'dial */known_hosts_unreadable': 'transient',
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
  // A hung iohelper is the host's passing trouble, like a call that ran out of time.
  'kvm2 ERR_LIBVIRT_STREAM_STALLED': 'transient',
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
  'kvm2 ERR_IMAGE_FILE': 'derived',
  'kvm2 ERR_IMAGE_DIGEST_MISMATCH': 'permanent',
  'kvm2 ERR_IMAGE_TOO_LARGE': 'permanent',
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
  'kvm2 ERR_POOL_INACTIVE': 'transient',
  'kvm2 ERR_PARTIAL_VIEW': 'derived',
  'kvm2 ERR_DUPLICATE_INSTANCE': 'transient',
  // The queue side: bad job data and a reused uid stay bad; Redis and waiting may pass.
  'kvm2 ERR_INVALID_JOB': 'permanent',
  'kvm2 ERR_UID_REUSED': 'permanent',
  'kvm2 ERR_ZONE_UNRESOLVED': 'permanent',
  'kvm2 ERR_ZONE_UNAVAILABLE': 'transient',
  'kvm2 ERR_REDIS_UNAVAILABLE': 'transient',
  'kvm2 ERR_CLIENT_CLOSED': 'permanent',
  'kvm2 ERR_WAIT_TIMEOUT': 'transient',
  'kvm2 ERR_RESULT_GONE': 'permanent',
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
