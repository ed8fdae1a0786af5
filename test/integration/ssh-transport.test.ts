// The SSH and UNIX transports against a private sshd (test/harness/sshd.ts) and the machine's
// real libvirtd. Each dial fault is checked the way a caller branches: class, stage, reason, kind.
import { execFile, spawn } from 'node:child_process';
import { copyFile, readFile, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DialError } from '../../src/libvirt/transport/dial-error.js';
import { formatKnownHostsLine } from '../../src/libvirt/transport/known-hosts.js';
import { dialSsh } from '../../src/libvirt/transport/ssh.js';
import type { DialOptions, Link } from '../../src/libvirt/transport/types.js';
import { dialUnix } from '../../src/libvirt/transport/unix.js';
import { DEFAULT_SOCKET, parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { freePort, startSshd, type Sshd } from '../harness/sshd.js';

const execFileAsync = promisify(execFile);

// REMOTE_PROC_AUTH_LIST (66) as a call: len 28, prog 0x20008086, vers 1, proc 0x42,
// type 0 (call), serial 1, status 0, no arguments.
const AUTH_LIST_CALL = Buffer.from(
  '0000001c' + '20008086' + '00000001' + '00000042' + '00000000' + '00000001' + '00000000',
  'hex',
);

interface ReplyHeader {
  length: number;
  prog: number;
  vers: number;
  proc: number;
  type: number;
  serial: number;
  status: number;
}

/** Writes AUTH_LIST and reads one whole reply frame back. */
async function authList(stream: Duplex): Promise<ReplyHeader> {
  let buf = Buffer.alloc(0);
  const frame = await new Promise<Buffer>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no reply within 5 s')), 5_000);
    const onData = (chunk: Buffer): void => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length >= 4 && buf.length >= buf.readUInt32BE(0)) done(null, buf);
    };
    const onClose = (): void => done(new Error('stream closed before the reply'));
    const done = (err: Error | null, frame?: Buffer): void => {
      clearTimeout(timer);
      stream
        .removeListener('data', onData)
        .removeListener('error', done)
        .removeListener('close', onClose);
      if (err === null && frame !== undefined) resolve(frame);
      else reject(err ?? new Error('no frame'));
    };
    stream.on('data', onData).once('error', done).once('close', onClose);
    stream.write(AUTH_LIST_CALL);
  });
  const word = (i: number): number => frame.readUInt32BE(i * 4);
  return {
    length: word(0),
    prog: word(1),
    vers: word(2),
    proc: word(3),
    type: word(4),
    serial: word(5),
    status: word(6),
  };
}

const AUTH_LIST_REPLY = { prog: 0x20008086, vers: 1, proc: 0x42, type: 1, serial: 1, status: 0 };

async function dialFails(uri: string, opts: DialOptions = {}): Promise<DialError> {
  const outcome = await dialSsh(parseLibvirtUri(uri), opts).then(
    (link) => {
      link.close();
      return new Error('dial unexpectedly succeeded');
    },
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(DialError);
  return outcome as DialError;
}

function waitForClose(stream: Duplex, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`stream still open after ${ms} ms`)), ms);
    stream.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return check();
}

/** A TCP listener that accepts and never says a word (no SSH banner). */
async function silentListener(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

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

  it('calls the host unknown when known_hosts cannot be read', async () => {
    const missing = path.join(sshd.dir, 'no-such-known-hosts');
    const err = await dialFails(sshd.uri('/system', { known_hosts: missing }));
    expect(err).toMatchObject({ stage: 'hostkey', reason: 'host_key_unknown', kind: 'permanent' });
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
