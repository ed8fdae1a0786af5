// Which host key algorithm dialSsh asks a private sshd (test/harness/sshd.ts) for, when the
// daemon serves keys of two types, and a host key rotated under known_hosts.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialSsh } from '../../src/libvirt/transport/ssh.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { AUTH_LIST_REPLY, authList, dialFails } from '../harness/transport-probes.js';

describe('dialSsh host key algorithm choice', () => {
  let sshd: Sshd;

  beforeAll(async () => {
    sshd = await startSshd({ hostKeyTypes: ['ed25519', 'ecdsa'] });
  });
  afterAll(async () => {
    await sshd?.stop();
  });

  it('asks first for the key type known_hosts holds, whatever the server prefers', async () => {
    for (const [i, key] of sshd.hostKeys.entries()) {
      const file = path.join(sshd.dir, `known_hosts.only-${i}`);
      await sshd.writeKnownHosts(file, [key]);
      const link = await dialSsh(parseLibvirtUri(sshd.uri('/system', { known_hosts: file })), {
        timeoutMs: 5_000,
      });
      expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
      link.close();
    }
  });

  it('reports a rotated host key as a mismatch', async () => {
    await sshd.rotateHostKey();
    const err = await dialFails(sshd.uri('/system'), { timeoutMs: 5_000 });
    expect(err).toMatchObject({ stage: 'hostkey', reason: 'host_key_mismatch', kind: 'permanent' });
  });
});
