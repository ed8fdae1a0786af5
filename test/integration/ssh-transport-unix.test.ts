// The UNIX transport against the machine's real libvirtd socket. Each dial fault is checked
// the way a caller branches: class, stage, reason, kind.
import { describe, expect, it } from 'vitest';
import { DialError } from '../../src/libvirt/transport/dial-error.js';
import { dialUnix } from '../../src/libvirt/transport/unix.js';
import { DEFAULT_SOCKET } from '../../src/libvirt/transport/uri.js';
import { AUTH_LIST_REPLY, authList } from '../harness/transport-probes.js';

describe('dialUnix', () => {
  it('carries AUTH_LIST to the local libvirtd socket', async () => {
    const link = await dialUnix(DEFAULT_SOCKET, 'localhost', { timeoutMs: 5_000 });
    try {
      expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
    } finally {
      link.close();
    }
  });

  it('reports a missing socket at the socket stage, transient', async () => {
    const err = await dialUnix('/var/run/libvirt/no-such-sock', 'localhost', {
      timeoutMs: 1_000,
    }).then(
      () => new Error('dial unexpectedly succeeded'),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DialError);
    expect(err).toMatchObject({ stage: 'socket', reason: 'socket_unavailable', kind: 'transient' });
  });

  it('refuses to start with an aborted signal', async () => {
    const err = await dialUnix(DEFAULT_SOCKET, 'localhost', { signal: AbortSignal.abort() }).then(
      () => new Error('dial unexpectedly succeeded'),
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ stage: 'socket', reason: 'aborted' });
  });
});
