// The SSH transport: one SSH connection per link, one `direct-streamlocal@openssh.com` channel
// to the daemon's socket on the host (what go-libvirt's ssh dialer and `ssh -L path:path` do;
// LIBVIRT-RPC-FACTS §9). No nc or virt-ssh-helper runs remotely; one `true` does, beside the
// forward, so that sshd turns Nagle's algorithm off (askForNoDelay, below), and until the forward
// is open every chunk sshd sends is acknowledged at once (ackWhileForwarding).
//
// Stages, each with its own failure reason (SPEC §4):
//   resolve    dns.lookup of the host
//   tcp        our own net.connect, handed to ssh2 as `sock`
//   handshake  SSH version exchange and key exchange
//   hostkey    the server's key against the known_hosts file, read fresh at every dial
//   auth       the key file, read fresh at every dial (rotation needs no restart), and the agent
//   forward    the streamlocal channel to the daemon's socket
// The budget (`timeoutMs`) covers the whole dial; a timeout or abort names the running stage.
import { lookup } from 'node:dns/promises';
import net from 'node:net';
import ssh2 from 'ssh2';
import type { AgentAuthMethod, ClientChannel, ConnectConfig, PublicKeyAuthMethod } from 'ssh2';
import { redactUrl } from '../../errors/redact-url.js';
import { DialError, type DialReason, type DialStage } from './dial-error.js';
import {
  DEFAULT_IDENTITIES,
  hostKeyAlgorithmsFor,
  readClientKeys,
  readKnownHosts,
  type ClientKey,
} from './ssh-keys.js';
import { linkOver } from './ssh-link.js';
import type { LibvirtTarget, SshTarget } from './uri.js';
import { checkHostKey, keyTypeOf, knownKeyTypes, type KnownHostEntry } from './known-hosts.js';
import type { DialOptions, Link } from './types.js';

const { Client } = ssh2;

export const SSH_DIAL_DEFAULTS = Object.freeze({
  /** Budget of a dial when the caller gives none; ssh2's own readyTimeout default. */
  timeoutMs: 20_000,
});

type Ssh2Error = Error & { level?: string; code?: unknown };

const ignore = (): void => undefined;

/** Dials the daemon socket on an SSH host. Resolves once the channel to the socket is open. */
export async function dialSsh(target: LibvirtTarget, opts: DialOptions = {}): Promise<Link> {
  const ssh = target.ssh;
  if (ssh === undefined)
    throw new TypeError(`dialSsh needs an ssh URI, not '${redactUrl(target.uri)}'`);
  return new SshDial(target, ssh, opts).run();
}

type KnownHosts = KnownHostEntry[] | Error;

/**
 * One dial, stage by stage. Every failure source (timer, signal, socket, ssh2) settles the one
 * `failed` promise, and each stage races against it; the stage a failure names is the one
 * running when it came.
 */
class SshDial {
  private stage: DialStage = 'resolve';
  private readonly started = Date.now();
  private readonly timeoutMs: number;
  private readonly label: string;
  private fail!: (err: DialError) => void;
  private readonly failed: Promise<never>;
  /** Listener removals, run when the dial ends either way. */
  private readonly detach: (() => void)[] = [];
  private socket: net.Socket | undefined;
  private client: InstanceType<typeof Client> | undefined;

  constructor(
    private readonly target: LibvirtTarget,
    private readonly ssh: SshTarget,
    private readonly opts: DialOptions,
  ) {
    this.timeoutMs = opts.timeoutMs ?? SSH_DIAL_DEFAULTS.timeoutMs;
    this.label = `ssh ${ssh.host}:${ssh.port}`;
    this.failed = new Promise<never>((_, reject) => {
      this.fail = reject;
    });
    this.failed.catch(() => undefined);
  }

  private readonly dialError = (reason: DialReason, what: string, cause?: unknown): DialError =>
    new DialError(`${this.label}: ${what}`, this.stage, this.ssh.host, reason, { cause });

  private race<T>(step: Promise<T>): Promise<T> {
    return Promise.race([step, this.failed]);
  }

  async run(): Promise<Link> {
    const { signal } = this.opts;
    if (signal?.aborted === true) {
      throw this.dialError('aborted', 'dial aborted before it started', signal.reason);
    }
    const timer = setTimeout(() => {
      this.fail(
        this.dialError('timeout', `timed out during ${this.stage} after ${this.timeoutMs} ms`),
      );
    }, this.timeoutMs);
    const onAbort = (): void =>
      this.fail(this.dialError('aborted', `dial aborted during ${this.stage}`, signal?.reason));
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const [knownHosts, clientKeys] = await this.race(
        Promise.all([readKnownHosts(this.ssh), readClientKeys(this.ssh)]),
      );
      if (clientKeys instanceof Error) {
        this.stage = 'auth';
        throw this.dialError('key_unreadable', clientKeys.message);
      }
      if (clientKeys.length === 0 && !agentSocket()) {
        // Nothing to offer is no refusal by the host: a default identity being rotated, say.
        this.stage = 'auth';
        throw this.dialError(
          'key_unreadable',
          `no key to offer for user ${this.ssh.user}: the URI names no keyfile, no default identity (~/.ssh/${DEFAULT_IDENTITIES.join(', ')}) is usable, and SSH_AUTH_SOCK is not set`,
        );
      }
      const sock = await this.connectTcp();
      const conn = await this.handshake(sock, knownHosts, clientKeys);
      askForNoDelay(conn);
      this.detach.push(ackWhileForwarding(conn, sock));
      return linkOver(await this.forward(conn), conn, sock);
    } catch (err) {
      // ssh2 keeps reporting on a client we gave up (its ready timer, "Connection lost before
      // handshake"); an 'error' without a listener would crash the process.
      this.client?.on('error', ignore);
      this.client?.end();
      this.socket?.destroy();
      throw err instanceof DialError
        ? err
        : this.dialError('protocol_error', `unexpected failure during ${this.stage}`, err);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      for (const undo of this.detach) undo();
    }
  }

  /** Stages `resolve` and `tcp`: our own socket, handed to ssh2. */
  private async connectTcp(): Promise<net.Socket> {
    const address = await this.race(
      lookup(this.ssh.host).catch((err: NodeJS.ErrnoException) => {
        throw this.dialError(
          'unreachable',
          `cannot resolve host (${err.code ?? err.message})`,
          err,
        );
      }),
    );
    this.stage = 'tcp';
    // noDelay: RPC frames are small and latency-bound; with Nagle, a small frame written after
    // another (a stream's finish after its data) waits ~40 ms for the peer's delayed ACK.
    const sock = net.connect({ host: address.address, port: this.ssh.port, noDelay: true });
    this.socket = sock;
    await this.race(
      new Promise<void>((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException): void =>
          reject(
            this.dialError(
              'unreachable',
              `cannot connect to ${address.address} (${err.code ?? err.message})`,
              err,
            ),
          );
        sock.once('connect', resolve).once('error', onError);
        this.detach.push(() =>
          sock.removeListener('connect', resolve).removeListener('error', onError),
        );
      }),
    );
    return sock;
  }

  /** Stages `handshake`, `hostkey` and `auth`, until ssh2 says ready. */
  private async handshake(
    sock: net.Socket,
    knownHosts: KnownHosts,
    clientKeys: readonly ClientKey[],
  ): Promise<InstanceType<typeof Client>> {
    this.stage = 'handshake';
    const conn = new Client();
    this.client = conn;
    const { config, methods } = this.clientConfig(sock, knownHosts, clientKeys);
    await this.race(
      new Promise<void>((resolve, reject) => {
        let agentError: Ssh2Error | undefined;
        const onError = (err: Ssh2Error): void => {
          if (err.level === 'agent') {
            agentError = err; // ssh2 goes on with the next method
            return;
          }
          if (err.level === 'client-authentication' && clientKeys.length === 0 && agentError) {
            // The agent was all there was, and it offered nothing: no refusal by the host.
            const code = typeof agentError.code === 'string' ? agentError.code : agentError.message;
            const what = `the ssh-agent at SSH_AUTH_SOCK could not be used (${code}), and the URI names no keyfile`;
            reject(
              this.dialError(
                'key_unreadable',
                `no key to offer for user ${this.ssh.user}: ${what}`,
                err,
              ),
            );
            return;
          }
          reject(classifySsh2Error(err, this.stage, this.dialError, this.ssh.user, methods));
        };
        const onClose = (): void =>
          reject(this.dialError('protocol_error', `connection closed during ${this.stage}`));
        const onHandshake = (): void => {
          this.stage = 'auth';
        };
        conn.on('error', onError).once('close', onClose).once('handshake', onHandshake);
        conn.once('ready', resolve);
        this.detach.push(() =>
          conn
            .removeListener('error', onError)
            .removeListener('close', onClose)
            .removeListener('handshake', onHandshake)
            .removeListener('ready', resolve),
        );
        conn.connect(config);
      }),
    );
    return conn;
  }

  /** ssh2's settings: our socket, the host key check, the identities and nothing else. */
  private clientConfig(
    sock: net.Socket,
    knownHosts: KnownHosts,
    clientKeys: readonly ClientKey[],
  ): { config: ConnectConfig; methods: string } {
    const ssh = this.ssh;
    const agent = agentSocket();
    const authMethods: (PublicKeyAuthMethod | AgentAuthMethod)[] = [
      ...clientKeys.map((k) => ({ type: 'publickey' as const, username: ssh.user, key: k.key })),
      ...(agent === undefined ? [] : [{ type: 'agent' as const, username: ssh.user, agent }]),
    ];
    const config: ConnectConfig = {
      sock,
      username: ssh.user,
      hostVerifier: (key: Buffer) => this.verifyHostKey(knownHosts, key),
      // ssh2's own handshake-and-auth timer; ours fires at the same deadline.
      readyTimeout: Math.max(1, this.timeoutMs - (Date.now() - this.started)),
      // libvirt's keepalive watches the link; SSH pings would only add a second opinion.
      keepaliveInterval: 0,
      algorithms: {
        serverHostKey: hostKeyAlgorithmsFor(
          knownHosts instanceof Error ? [] : knownKeyTypes(knownHosts, ssh.host, ssh.port),
        ),
      },
      // Tried in this order, and nothing else (no 'none', no password).
      authHandler: authMethods,
    };
    const methods = [
      ...clientKeys.map((k) => `key ${k.path}`),
      ...(authMethods.some((m) => m.type === 'agent') ? ['ssh-agent'] : []),
    ].join(', ');
    return { config, methods };
  }

  /** Stage `hostkey`: the server's key against known_hosts, read fresh for this dial. */
  private verifyHostKey(knownHosts: KnownHosts, key: Buffer): boolean {
    this.stage = 'hostkey';
    const keyType = keyTypeOf(key) ?? 'unknown';
    const where = `known_hosts ${this.ssh.knownHostsFile}`;
    if (knownHosts instanceof Error) {
      this.fail(
        this.dialError(
          'known_hosts_unreadable',
          `host key not checked (${where} unreadable: ${knownHosts.message})`,
        ),
      );
      return false;
    }
    const verdict = checkHostKey(knownHosts, this.ssh.host, this.ssh.port, keyType, key);
    if (verdict === 'match') {
      this.stage = 'handshake'; // the key exchange still has to finish
      return true;
    }
    this.fail(
      verdict === 'mismatch'
        ? this.dialError('host_key_mismatch', `host key mismatch (${where})`)
        : this.dialError('host_key_unknown', `host key unknown (${keyType}, not in ${where})`),
    );
    return false;
  }

  /** Stage `forward`: the streamlocal channel to the daemon's socket. */
  private forward(conn: InstanceType<typeof Client>): Promise<ClientChannel> {
    this.stage = 'forward';
    const socketPath = this.target.socketPath;
    return this.race(
      new Promise<ClientChannel>((resolve, reject) => {
        const onClose = (): void =>
          reject(this.dialError('protocol_error', 'connection closed during forward'));
        conn.once('close', onClose);
        this.detach.push(() => conn.removeListener('close', onClose));
        conn.openssh_forwardOutStreamLocal(socketPath, (err, stream) => {
          if (err === undefined || err === null) resolve(stream);
          else reject(forwardError(err, socketPath, this.dialError));
        });
      }),
    );
  }
}

/**
 * OpenSSH's sshd turns Nagle's algorithm off on its socket only when a session runs a command
 * or a shell (`ssh_packet_set_interactive`); a connection that only forwards keeps Nagle on, so
 * with two replies in flight the second waits for our ACK of the first, which Linux delays up
 * to 40 ms (docs/benchmarks.md measured 16 of 40 paired calls at 42–55 ms, 0 of 40 with this).
 * So one session asks for `exec true` beside the forward and is closed once sshd has accepted
 * it: the accept comes after the switch. Best effort and not waited for: a server that refuses
 * sessions (`MaxSessions 0`) leaves Nagle on and the link works as before; a key's forced
 * command or a `nologin` shell runs instead of `true`, which still counts (sshd switches before
 * it runs anything), and gets end of input when the channel closes.
 */
function askForNoDelay(conn: InstanceType<typeof Client>): void {
  try {
    conn.exec('true', (err, stream) => {
      if (err !== undefined && err !== null) return;
      stream.on('error', ignore);
      stream.stderr.resume();
      stream.resume();
      stream.close();
    });
  } catch {
    // ssh2 throws when the connection is already gone: the forward reports that itself.
  }
}

/**
 * Until sshd has run `true` (askForNoDelay) its socket still has Nagle on, so a reply it writes
 * while an earlier write is unacknowledged waits for our ACK, which Linux delays up to 40 ms when
 * we have nothing to send. After a publickey login OpenSSH writes SSH_MSG_DEBUG lines ("key
 * options: …", once for the key check and once for the login) that need no answer, and the channel
 * confirmations came ~43 ms late in 7 of 15 dials (docs/benchmarks.md, #20 thirteenth slices).
 * So each chunk sshd sends while the forward is being opened is answered on the loop's next
 * turn by a `no-more-sessions@openssh.com` request without reply, which carries the ACK at
 * once: what OpenSSH's own client sends once its session is open, and the link opens no other
 * session (the `true` one was asked for before). ssh2 sends it only to an OpenSSH server.
 * Returns the undo, run when the dial ends.
 */
function ackWhileForwarding(conn: InstanceType<typeof Client>, sock: net.Socket): () => void {
  let queued: NodeJS.Immediate | undefined;
  const answer = (): void => {
    queued = undefined;
    try {
      // Without a callback ssh2 asks for no reply (@types/ssh2 require one).
      (conn.openssh_noMoreSessions as (this: typeof conn) => unknown).call(conn);
    } catch {
      // ssh2 throws when the connection is already gone: the forward reports that itself.
    }
  };
  const onData = (): void => {
    queued ??= setImmediate(answer);
  };
  sock.on('data', onData);
  return () => {
    sock.removeListener('data', onData);
    if (queued !== undefined) clearImmediate(queued);
  };
}

/** The ssh-agent's socket, from SSH_AUTH_SOCK; undefined when it is unset or empty. */
function agentSocket(): string | undefined {
  const agent = process.env.SSH_AUTH_SOCK;
  return agent === undefined || agent === '' ? undefined : agent;
}

function classifySsh2Error(
  err: Ssh2Error,
  stage: DialStage,
  dialError: (reason: DialReason, what: string, cause?: unknown) => DialError,
  user: string,
  methods: string,
): DialError {
  if (err.level === 'client-timeout') return dialError('timeout', `timed out during ${stage}`, err);
  // ssh2 reports "All configured authentication methods failed"; a server that disconnects
  // during auth (e.g. "Too many authentication failures") refuses us just the same.
  if (err.level === 'client-authentication' || (stage === 'auth' && typeof err.code === 'number')) {
    return dialError(
      'auth_failed',
      `authentication refused for user ${user} (tried: ${methods || 'nothing'})`,
      err,
    );
  }
  if (err.level === 'client-socket') {
    const code = typeof err.code === 'string' ? err.code : err.message;
    return dialError('unreachable', `connection failed during ${stage} (${code})`, err);
  }
  return dialError('protocol_error', `${stage} failed (${err.message})`, err);
}

// RFC 4254 §5.1 channel open failure reason codes.
const OPEN_ADMINISTRATIVELY_PROHIBITED = 1;
const OPEN_FAILURE_NAMES: Readonly<Record<number, string>> = {
  1: 'administratively prohibited',
  2: 'connect failed',
  3: 'unknown channel type',
  4: 'resource shortage',
};

/**
 * A refused streamlocal channel: transient, the daemon may come back. OpenSSH 9.2 answers
 * "connect failed"/"open failed" alike for a missing socket, a refused connect and
 * `AllowStreamLocalForwarding no` (only its log tells them apart). A server that does say
 * "administratively prohibited" will not change its mind on a retry: permanent.
 */
function forwardError(
  err: Error & { reason?: unknown },
  socketPath: string,
  dialError: (reason: DialReason, what: string, cause?: unknown) => DialError,
): DialError {
  const code = typeof err.reason === 'number' ? err.reason : undefined;
  const description = err.message.replace(/^\(SSH\) Channel open failure: /, '');
  const name = code === undefined ? undefined : OPEN_FAILURE_NAMES[code];
  const why = name === undefined ? description : `${name}: ${description}`;
  const reason =
    code === OPEN_ADMINISTRATIVELY_PROHIBITED ? 'forward_prohibited' : 'socket_unavailable';
  return dialError(reason, `cannot open ${socketPath} on the host (${why})`, err);
}
