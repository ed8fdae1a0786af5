// sshd switches Nagle's algorithm off only for a connection whose session ran a command; kvm2's
// link asks for `exec true` beside its forward (src/libvirt/transport/ssh.ts, askForNoDelay).
// Read from sshd's own socket (test/harness/tcp-nodelay.ts): a bare forward leaves Nagle on, a
// kvm2 link turns it off, and a server that refuses sessions still carries the link. Until it is
// off, the dial acknowledges what sshd writes (ackWhileForwarding), timed here against a dial
// that does not.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import net from 'node:net';
import ssh2 from 'ssh2';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dialSsh } from '../../src/libvirt/transport/ssh.js';
import type { Link } from '../../src/libvirt/transport/types.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { AUTH_LIST_REPLY, authList, eventually } from '../harness/transport-probes.js';

/**
 * A forward-only SSH connection, as kvm2 made them before: ssh2 with nothing else asked.
 * `withTrue` asks for `exec true` beside the forward first and answers nothing else, as kvm2's
 * dial did before it acknowledged sshd's writes (ackWhileForwarding).
 */
async function bareForward(
  sshd: Sshd,
  withTrue = false,
): Promise<{ localPort: number; close(): void }> {
  const socketPath = parseLibvirtUri(sshd.uri('/system')).socketPath;
  const sock = net.connect({ host: sshd.host, port: sshd.port, noDelay: true });
  await new Promise<void>((resolve, reject) => sock.once('connect', resolve).once('error', reject));
  const client = new ssh2.Client();
  const privateKey = await readFile(sshd.clientKeyPath);
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve).once('error', reject);
    client.connect({
      sock,
      username: 'root',
      privateKey,
      hostVerifier: () => true, // loopback, the harness's own daemon
    });
  });
  if (withTrue) client.exec('true', (err, stream) => (err ? undefined : stream.resume()));
  const channel = await new Promise<ssh2.ClientChannel>((resolve, reject) =>
    client.openssh_forwardOutStreamLocal(socketPath, (err, stream) =>
      err ? reject(err) : resolve(stream),
    ),
  );
  expect(await authList(channel)).toMatchObject(AUTH_LIST_REPLY);
  return {
    localPort: sock.localPort ?? 0,
    close: () => {
      client.end();
      sock.destroy();
    },
  };
}

describe('sshd turns Nagle off for a kvm2 link', () => {
  let sshd: Sshd;
  let refusing: Sshd;
  const closers: (() => void)[] = [];

  beforeAll(async () => {
    [sshd, refusing] = await Promise.all([
      startSshd(),
      // "0 prevents all shell, login and subsystem sessions while still permitting forwarding"
      startSshd({ extraConfig: ['MaxSessions 0'] }),
    ]);
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) close();
    await eventually(async () => (await sshd.sessionCount()) === 0, 2_000);
  });
  afterAll(async () => {
    await Promise.all([sshd?.stop(), refusing?.stop()]);
  });

  const dial = async (on: Sshd): Promise<Link> => {
    const link = await dialSsh(parseLibvirtUri(on.uri('/system')), { timeoutMs: 5_000 });
    closers.push(() => link.close());
    return link;
  };

  it('a bare forward leaves Nagle on at sshd: the probe can tell', async () => {
    const bare = await bareForward(sshd);
    closers.push(() => bare.close());
    const held = (await sshd.heldSockets()).filter((s) => s.peerPort === bare.localPort);
    expect(held.length).toBeGreaterThan(0);
    expect(held.every((s) => !s.noDelay)).toBe(true);
  });

  it('a kvm2 link has TCP_NODELAY on sshd’s end, and carries libvirt’s frames', async () => {
    const link = await dial(sshd);
    expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
    const allNoDelay = async (): Promise<boolean> => {
      const held = await sshd.heldSockets();
      return held.length > 0 && held.every((s) => s.noDelay);
    };
    expect(await eventually(allNoDelay, 3_000)).toBe(true);
    expect(await readFile(sshd.logPath, 'utf8')).toMatch(/Starting session: command for root/);
  });

  it('a key with a forced command: the command runs instead of true, and Nagle still goes off', async () => {
    const forced = await sshd.makeKey('forced');
    const marker = path.join(sshd.dir, 'forced-ran');
    await writeFile(
      path.join(sshd.dir, 'authorized_keys'),
      `command="touch ${marker}" ${forced.publicLine}\n`,
      { mode: 0o600 },
    );
    try {
      const link = await dialSsh(
        parseLibvirtUri(sshd.uri('/system', { keyfile: forced.privatePath })),
        { timeoutMs: 5_000 },
      );
      closers.push(() => link.close());
      expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
      const ran = async (): Promise<boolean> =>
        readFile(marker).then(
          () => true,
          () => false,
        );
      expect(await eventually(ran, 3_000)).toBe(true);
      const held = await sshd.heldSockets();
      expect(held.length).toBeGreaterThan(0);
      expect(held.every((s) => s.noDelay)).toBe(true);
    } finally {
      await sshd.authorize(sshd.clientKey);
    }
  });

  /** Dials that took 35 ms or more over the fastest of them: a write held for a delayed ACK. */
  const heldDials = async (dialOnce: () => Promise<() => void>): Promise<number[]> => {
    const took: number[] = [];
    for (let i = 0; i < 24; i++) {
      const t0 = performance.now();
      const close = await dialOnce();
      took.push(performance.now() - t0);
      close();
    }
    const fastest = Math.min(...took);
    return took.filter((ms) => ms >= fastest + 35);
  };

  it('the dial acknowledges what sshd writes before Nagle is off: no confirmation waits 40 ms for it', async () => {
    // OpenSSH writes DEBUG lines after a publickey login that ask for no answer; with Nagle
    // still on, its next write (the channels' confirmations) waits for our ACK, which Linux
    // delays ~40 ms when we send nothing. The same dial without the answers shows it.
    // The delay shows in some of those dials, not in all (Linux acknowledges at once while it
    // deems a connection interactive): up to four batches, until one shows it.
    let before: number[] = [];
    for (let batch = 0; batch < 4 && before.length === 0; batch++) {
      before = await heldDials(async () => {
        const bare = await bareForward(sshd, true);
        return () => bare.close();
      });
    }
    expect(before.length).toBeGreaterThan(0);
    const now = await heldDials(async () => {
      const link = await dialSsh(parseLibvirtUri(sshd.uri('/system')), { timeoutMs: 5_000 });
      return () => link.close();
    });
    expect(now.length).toBeLessThanOrEqual(3);
  });

  it('the answer is a no-more-sessions request without reply, sent after the `true` session was asked for', async () => {
    const debug = await startSshd({ extraConfig: ['LogLevel DEBUG1'] });
    try {
      const link = await dial(debug);
      expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
      const log = async (): Promise<string> => readFile(debug.logPath, 'utf8');
      expect(
        await eventually(async () => /Starting session: command/.test(await log()), 3_000),
      ).toBe(true);
      const lines = (await log()).split('\n');
      const at = (re: RegExp): number => lines.findIndex((l) => re.test(l));
      const login = at(/Accepted publickey for root/);
      const session = at(/server_input_channel_open: ctype session/);
      const answer = at(/global_request: rtype no-more-sessions@openssh.com want_reply 0/);
      expect(login).toBeGreaterThanOrEqual(0);
      expect(session).toBeGreaterThan(login);
      expect(answer).toBeGreaterThan(session);
      // and the `true` session still ran: Nagle went off
      const held = await debug.heldSockets();
      expect(held.length).toBeGreaterThan(0);
      expect(held.every((s) => s.noDelay)).toBe(true);
    } finally {
      await debug.stop();
    }
  });

  it('a server that refuses sessions still carries the link (Nagle stays on there)', async () => {
    const link = await dial(refusing);
    expect(await authList(link.stream)).toMatchObject(AUTH_LIST_REPLY);
    const held = await refusing.heldSockets();
    expect(held.length).toBeGreaterThan(0);
    expect(held.every((s) => !s.noDelay)).toBe(true);
    expect(await readFile(refusing.logPath, 'utf8')).not.toMatch(/Starting session/);
  });
});
