// classifyError beyond the table's rows: cause chains, errors revived as plain objects, the
// dial and HTTP lookups, and values that are no errors at all.
import { describe, expect, it } from 'vitest';
import {
  classifyError,
  dialErrorKind,
  httpStatusKind,
  libvirtErrorKind,
  nodeErrorKind,
} from '../../src/errors/classify.js';
import { Kvm2Error } from '../../src/errors/error.js';
import type { ErrorKind } from '../../src/errors/kind.js';
import { VirErr } from '../../src/libvirt/error-codes.js';
import {
  DialError,
  type DialReason,
  type DialStage,
} from '../../src/libvirt/transport/dial-error.js';
import { systemError } from '../harness/error-examples.js';

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

  // A connection lost during auth is no refused credential: the stage row says transient and
  // only the reason rows (auth_failed, host key) make a dial permanent.
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
