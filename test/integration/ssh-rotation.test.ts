// Rotating the key file or known_hosts under a running worker (docs/libvirt-client.md): both are
// read at every dial, so a file that is briefly missing or half-written fails that dial as
// transient, and the next dial, with the file back, works with no restart. Only the server's
// verdict (a refused key, a changed host key) is permanent. Real sshd, real libvirtd.
import { copyFile, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyError } from '../../src/errors/classify.js';
import { dialSsh } from '../../src/libvirt/transport/ssh.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { dialHealthReason } from '../../src/provider/health/reasons.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { AUTH_LIST_REPLY, authList, dialFails } from '../harness/transport-probes.js';

let sshd: Sshd;

beforeAll(async () => {
  sshd = await startSshd();
});

afterAll(async () => {
  await sshd?.stop();
});

/** Dials `uri` and asks libvirtd one question: the link works end to end. */
async function dialsThrough(uri: string): Promise<void> {
  const link = await dialSsh(parseLibvirtUri(uri), { timeoutMs: 5_000 });
  try {
    expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
  } finally {
    link.close();
  }
}

describe('a key file in the middle of a rotation', () => {
  it('missing for a moment: key_unreadable, transient, and the next dial works', async () => {
    const keyFile = path.join(sshd.dir, 'rotation-key');
    const uri = sshd.uri('/system', { keyfile: keyFile });
    await copyFile(sshd.clientKey.privatePath, keyFile);
    await dialsThrough(uri);

    await rename(keyFile, `${keyFile}.old`);
    const err = await dialFails(uri);
    expect(err).toMatchObject({ stage: 'auth', reason: 'key_unreadable', kind: 'transient' });
    expect(classifyError(err)).toBe('transient');
    expect(err.message).toContain(keyFile);
    expect(err.message).toContain('ENOENT');
    // A health check still points the operator at the key.
    expect(dialHealthReason('key_unreadable')).toBe('auth_failed');

    await rename(`${keyFile}.old`, keyFile);
    await dialsThrough(uri);
  });

  it('half written: key_unreadable, transient, naming the file and none of its content', async () => {
    const keyFile = path.join(sshd.dir, 'rotation-key-partial');
    const uri = sshd.uri('/system', { keyfile: keyFile });
    const whole = await readFile(sshd.clientKey.privatePath, 'utf8');
    const half = whole.slice(0, Math.floor(whole.length / 2));
    await writeFile(keyFile, half, { mode: 0o600 });
    const err = await dialFails(uri);
    expect(err).toMatchObject({ stage: 'auth', reason: 'key_unreadable', kind: 'transient' });
    expect(err.message).toContain(keyFile);
    for (const line of half.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----'))) {
      expect(err.message).not.toContain(line);
    }
    await writeFile(keyFile, whole, { mode: 0o600 });
    await dialsThrough(uri);
  });
});

describe('known_hosts in the middle of a rotation', () => {
  it('missing for a moment: known_hosts_unreadable, transient, and the next dial works', async () => {
    const file = path.join(sshd.dir, 'known_hosts.rotating');
    const uri = sshd.uri('/system', { known_hosts: file });
    await copyFile(sshd.knownHostsPath, file);
    await dialsThrough(uri);

    await rename(file, `${file}.old`);
    const err = await dialFails(uri);
    expect(err).toMatchObject({
      stage: 'hostkey',
      reason: 'known_hosts_unreadable',
      kind: 'transient',
    });
    expect(err.message).toContain(file);
    expect(dialHealthReason('known_hosts_unreadable')).toBe('host_key_unknown');

    await rename(`${file}.old`, file);
    await dialsThrough(uri);
  });

  it('readable but without the host: still host_key_unknown, permanent', async () => {
    const file = path.join(sshd.dir, 'known_hosts.without-host');
    await writeFile(file, '');
    const err = await dialFails(sshd.uri('/system', { known_hosts: file }));
    expect(err).toMatchObject({ stage: 'hostkey', reason: 'host_key_unknown', kind: 'permanent' });
  });
});
