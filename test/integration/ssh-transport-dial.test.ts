// dialSsh through a private sshd (test/harness/sshd.ts) to the machine's real libvirtd: a link
// that carries libvirt's frames, and each dial fault checked the way a caller branches: class,
// stage, reason, kind.
import { execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { formatKnownHostsLine } from '../../src/libvirt/transport/known-hosts.js';
import { dialSsh } from '../../src/libvirt/transport/ssh.js';
import type { DialOptions, Link } from '../../src/libvirt/transport/types.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { freePort, startSshd, type Sshd } from '../harness/sshd.js';
import {
  AUTH_LIST_REPLY,
  authList,
  dialFails,
  eventually,
  silentListener,
  waitForClose,
} from '../harness/transport-probes.js';

const execFileAsync = promisify(execFile);

describe('dialSsh through a private sshd to the real libvirtd', () => {
  let sshd: Sshd;
  const links: Link[] = [];

  beforeAll(async () => {
    sshd = await startSshd();
  });
  afterAll(async () => {
    for (const link of links) link.close();
    await sshd?.stop();
  });

  const dial = async (uri: string, opts: DialOptions = { timeoutMs: 5_000 }): Promise<Link> => {
    const link = await dialSsh(parseLibvirtUri(uri), opts);
    links.push(link);
    return link;
  };

  it('carries AUTH_LIST to libvirtd and its reply back', async () => {
    const link = await dial(sshd.uri('/system'));
    expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
    link.close();
  });

  it('accepts a host known only by a hashed known_hosts entry', async () => {
    const link = await dial(sshd.uri('/system', { known_hosts: sshd.hashedKnownHostsPath }));
    expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
    link.close();
  });

  it('close() ends the SSH session on the host', async () => {
    const link = await dial(sshd.uri('/system'));
    await authList(link.stream);
    expect(await sshd.sessionCount()).toBeGreaterThan(0);
    link.close();
    link.close(); // idempotent
    expect(await eventually(async () => (await sshd.sessionCount()) === 0, 2_000)).toBe(true);
  });

  it('closes the stream when the SSH connection dies under it', async () => {
    const link = await dial(sshd.uri('/system'));
    await authList(link.stream);
    link.stream.on('data', () => undefined);
    const closed = waitForClose(link.stream, 3_000);
    await sshd.killSessions();
    await closed;
    link.close();
  });

  it('refuses a key the host does not authorise: auth, permanent, no key material in the error', async () => {
    const wrong = await sshd.makeKey('wrong');
    const err = await dialFails(sshd.uri('/system', { keyfile: wrong.privatePath }));
    expect(err).toMatchObject({
      stage: 'auth',
      reason: 'auth_failed',
      kind: 'permanent',
      host: '127.0.0.1',
    });
    expect(err.message).toContain(`ssh 127.0.0.1:${sshd.port}`);
    const secretLines = (await readFile(wrong.privatePath, 'utf8'))
      .split('\n')
      .filter((l) => l.length > 20 && !l.startsWith('-----'));
    const shown = `${err.message}\n${String(err.stack)}\n${String((err.cause as Error | undefined)?.message)}`;
    for (const line of secretLines) expect(shown).not.toContain(line);
  });

  it('refuses a host missing from known_hosts: hostkey, host_key_unknown, permanent', async () => {
    const empty = path.join(sshd.dir, 'known_hosts.empty');
    await writeFile(empty, '');
    const err = await dialFails(sshd.uri('/system', { known_hosts: empty }));
    expect(err).toMatchObject({ stage: 'hostkey', reason: 'host_key_unknown', kind: 'permanent' });
    expect(err.message).toContain(empty);
  });

  it('refuses a changed host key: hostkey, host_key_mismatch, permanent', async () => {
    const otherHostKey = await sshd.makeKey('other-host');
    const file = path.join(sshd.dir, 'known_hosts.changed');
    await sshd.writeKnownHosts(file, [otherHostKey]);
    const err = await dialFails(sshd.uri('/system', { known_hosts: file }));
    expect(err).toMatchObject({ stage: 'hostkey', reason: 'host_key_mismatch', kind: 'permanent' });
    expect(err.message).toBe(`ssh 127.0.0.1:${sshd.port}: host key mismatch (known_hosts ${file})`);
  });

  it('refuses a revoked host key even when it is also listed', async () => {
    const file = path.join(sshd.dir, 'known_hosts.revoked');
    const hostKey = sshd.hostKeys[0]?.blob ?? Buffer.alloc(0);
    await writeFile(
      file,
      `${formatKnownHostsLine('127.0.0.1', sshd.port, hostKey)}\n${formatKnownHostsLine('*', 22, hostKey, { marker: 'revoked' })}\n`,
    );
    const err = await dialFails(sshd.uri('/system', { known_hosts: file }));
    expect(err).toMatchObject({ stage: 'hostkey', reason: 'host_key_mismatch', kind: 'permanent' });
  });

  it('reports a closed port at the tcp stage, transient', async () => {
    const port = await freePort();
    const uri = sshd.uri('/system').replace(`:${sshd.port}/`, `:${port}/`);
    const err = await dialFails(uri);
    expect(err).toMatchObject({ stage: 'tcp', reason: 'unreachable', kind: 'transient' });
  });

  it('reports a missing daemon socket at the forward stage, transient', async () => {
    const err = await dialFails(sshd.uri('/system', { socket: '/var/run/libvirt/no-such-sock' }));
    expect(err).toMatchObject({
      stage: 'forward',
      reason: 'socket_unavailable',
      kind: 'transient',
    });
    expect(err.message).toContain('/var/run/libvirt/no-such-sock');
  });

  it('reads the key file at every dial, so a rotated key needs no restart', async () => {
    const keyA = await sshd.makeKey('rotate-a');
    const keyB = await sshd.makeKey('rotate-b');
    const keyFile = path.join(sshd.dir, 'rotating-key');
    const uri = sshd.uri('/system', { keyfile: keyFile });
    try {
      await copyFile(keyA.privatePath, keyFile);
      await sshd.authorize(keyA);
      const first = await dial(uri);
      expect(await authList(first.stream)).toMatchObject(AUTH_LIST_REPLY);
      first.close();

      await copyFile(keyB.privatePath, keyFile);
      await sshd.authorize(keyB);
      const second = await dial(uri);
      expect(await authList(second.stream)).toMatchObject(AUTH_LIST_REPLY);
      second.close();

      // Replaced by a key the host no longer accepts: refused, though A worked before.
      await copyFile(keyA.privatePath, keyFile);
      const err = await dialFails(uri);
      expect(err).toMatchObject({ stage: 'auth', reason: 'auth_failed', kind: 'permanent' });
    } finally {
      await sshd.authorize(sshd.clientKey);
    }
  });

  it('authenticates with the ssh-agent from SSH_AUTH_SOCK when the key file is refused', async () => {
    const socketPath = path.join(sshd.dir, 'agent.sock');
    const agent = spawn('ssh-agent', ['-D', '-a', socketPath], { stdio: 'ignore' });
    const agentExited = new Promise((resolve) => agent.once('exit', resolve));
    const saved = process.env.SSH_AUTH_SOCK;
    try {
      await eventually(
        async () => (await stat(socketPath).catch(() => undefined)) !== undefined,
        2_000,
      );
      await execFileAsync('ssh-add', ['-q', sshd.clientKeyPath], {
        env: { ...process.env, SSH_AUTH_SOCK: socketPath },
      });
      process.env.SSH_AUTH_SOCK = socketPath;
      const wrong = await sshd.makeKey('agent-wrong');
      const link = await dial(sshd.uri('/system', { keyfile: wrong.privatePath }));
      expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
      link.close();
    } finally {
      if (saved === undefined) delete process.env.SSH_AUTH_SOCK;
      else process.env.SSH_AUTH_SOCK = saved;
      agent.kill('SIGTERM');
      await agentExited;
    }
  });

  describe('nothing to offer is no refusal: key_unreadable, transient', () => {
    // No keyfile in the URI: the default identities under $HOME/.ssh and the agent are all.
    const withoutKeyfile = (): string => sshd.uri('/system').replace(/keyfile=[^&]*&?/, '');
    const saved = { home: process.env.HOME, agent: process.env.SSH_AUTH_SOCK };
    const restore = (name: 'HOME' | 'SSH_AUTH_SOCK', value: string | undefined): void => {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    };
    afterEach(() => {
      restore('HOME', saved.home);
      restore('SSH_AUTH_SOCK', saved.agent);
    });

    it('an ssh-agent that cannot be reached, and no key file', async () => {
      process.env.HOME = await mkdtemp(path.join(sshd.dir, 'home-'));
      process.env.SSH_AUTH_SOCK = path.join(sshd.dir, 'no-agent.sock');
      expect(withoutKeyfile()).not.toContain('keyfile');
      const err = await dialFails(withoutKeyfile());
      expect(err).toMatchObject({ stage: 'auth', reason: 'key_unreadable', kind: 'transient' });
      expect(err.message).toMatch(/the ssh-agent at SSH_AUTH_SOCK could not be used \(.+\)/);
    });

    it('a default identity half-written (being rotated), and no agent', async () => {
      const home = await mkdtemp(path.join(sshd.dir, 'home-'));
      await mkdir(path.join(home, '.ssh'));
      const key = await readFile(sshd.clientKeyPath, 'utf8');
      await writeFile(path.join(home, '.ssh', 'id_ed25519'), key.slice(0, key.length / 2));
      process.env.HOME = home;
      delete process.env.SSH_AUTH_SOCK;
      const err = await dialFails(withoutKeyfile());
      expect(err).toMatchObject({ stage: 'auth', reason: 'key_unreadable', kind: 'transient' });
      expect(err.message).toMatch(/no key to offer for user root/);
      // The whole key in place again: the next dial goes through.
      await writeFile(path.join(home, '.ssh', 'id_ed25519'), key, { mode: 0o600 });
      const link = await dial(withoutKeyfile());
      expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
      link.close();
    });
  });

  it('gives up a silent server at the handshake stage within its budget, transient', async () => {
    const silent = await silentListener();
    try {
      const uri = sshd.uri('/system').replace(`:${sshd.port}/`, `:${silent.port}/`);
      const started = Date.now();
      const err = await dialFails(uri, { timeoutMs: 300 });
      expect(err).toMatchObject({ stage: 'handshake', reason: 'timeout', kind: 'transient' });
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await silent.close();
    }
  });

  it('stops when its signal aborts, naming the stage that was running', async () => {
    const silent = await silentListener();
    try {
      const uri = sshd.uri('/system').replace(`:${sshd.port}/`, `:${silent.port}/`);
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('caller left')), 100);
      const err = await dialFails(uri, { signal: controller.signal, timeoutMs: 10_000 });
      expect(err).toMatchObject({ stage: 'handshake', reason: 'aborted', kind: 'transient' });

      const early = await dialFails(sshd.uri('/system'), { signal: AbortSignal.abort() });
      expect(early).toMatchObject({ stage: 'resolve', reason: 'aborted', kind: 'transient' });
    } finally {
      await silent.close();
    }
  });
});
