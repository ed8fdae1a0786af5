// The SSH transport: one SSH connection per link, one `direct-streamlocal@openssh.com` channel
// to the daemon's socket on the host (what go-libvirt's ssh dialer and `ssh -L path:path` do;
// LIBVIRT-RPC-FACTS §9). No nc or virt-ssh-helper runs remotely.
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
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import ssh2 from 'ssh2';
import type {
  AgentAuthMethod,
  ClientChannel,
  ConnectConfig,
  ParsedKey,
  PublicKeyAuthMethod,
  ServerHostKeyAlgorithm,
} from 'ssh2';
import { DialError, type DialReason, type DialStage } from './dial-error.js';
import type { LibvirtTarget, SshTarget } from './uri.js';
import {
  checkHostKey,
  keyTypeOf,
  knownKeyTypes,
  parseKnownHosts,
  type KnownHostEntry,
} from './known-hosts.js';
import type { DialOptions, Link } from './types.js';

const { Client, utils } = ssh2;

export const SSH_DIAL_DEFAULTS = Object.freeze({
  /** Budget of a dial when the caller gives none; ssh2's own readyTimeout default. */
  timeoutMs: 20_000,
});

// ssh2's default host key algorithm order (lib/protocol/constants.js), and the algorithms that
// carry each key type. `algorithms.serverHostKey` replaces the list, so we give it whole.
const HOST_KEY_ALGORITHMS: readonly ServerHostKeyAlgorithm[] = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];
const ALGORITHMS_BY_KEY_TYPE: Readonly<Record<string, readonly ServerHostKeyAlgorithm[]>> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
  'ssh-dss': ['ssh-dss'],
};

/**
 * Host key algorithms with the types known_hosts holds for the host first, as ssh(1) orders
 * them, so a host known by its ed25519 key is not called unknown because rsa was offered first.
 */
export function hostKeyAlgorithmsFor(knownTypes: readonly string[]): ServerHostKeyAlgorithm[] {
  const preferred = knownTypes.flatMap((t) => ALGORITHMS_BY_KEY_TYPE[t] ?? []);
  return [...new Set([...preferred, ...HOST_KEY_ALGORITHMS])];
}

type Ssh2Error = Error & { level?: string; code?: unknown };

const ignore = (): void => undefined;

/** Dials the daemon socket on an SSH host. Resolves once the channel to the socket is open. */
export async function dialSsh(target: LibvirtTarget, opts: DialOptions = {}): Promise<Link> {
  const ssh = target.ssh;
  if (ssh === undefined) throw new TypeError(`dialSsh needs an ssh URI, not '${target.uri}'`);
  const { signal } = opts;
  const timeoutMs = opts.timeoutMs ?? SSH_DIAL_DEFAULTS.timeoutMs;
  const label = `ssh ${ssh.host}:${ssh.port}`;
  const started = Date.now();
  let stage: DialStage = 'resolve';

  const dialError = (reason: DialReason, what: string, cause?: unknown): DialError =>
    new DialError(`${label}: ${what}`, stage, ssh.host, reason, { cause });

  if (signal?.aborted === true)
    throw dialError('aborted', 'dial aborted before it started', signal.reason);

  // Every failure source (timer, signal, socket, ssh2) settles this one promise; each step
  // races against it.
  let fail!: (err: DialError) => void;
  const failed = new Promise<never>((_, reject) => {
    fail = reject;
  });
  failed.catch(() => undefined);
  const timer = setTimeout(() => {
    fail(dialError('timeout', `timed out during ${stage} after ${timeoutMs} ms`));
  }, timeoutMs);
  const onAbort = (): void =>
    fail(dialError('aborted', `dial aborted during ${stage}`, signal?.reason));
  signal?.addEventListener('abort', onAbort, { once: true });

  let socket: net.Socket | undefined;
  let client: InstanceType<typeof Client> | undefined;
  const detach: (() => void)[] = [];
  try {
    const [knownHosts, clientKeys] = await Promise.race([
      Promise.all([readKnownHosts(ssh), readClientKeys(ssh)]),
      failed,
    ]);
    if (clientKeys instanceof Error) {
      stage = 'auth';
      throw dialError('auth_failed', clientKeys.message);
    }

    const address = await Promise.race([
      lookup(ssh.host).catch((err: NodeJS.ErrnoException) => {
        throw dialError('unreachable', `cannot resolve host (${err.code ?? err.message})`, err);
      }),
      failed,
    ]);

    stage = 'tcp';
    // noDelay: RPC frames are small and latency-bound; with Nagle, a small frame written after
    // another (a stream's finish after its data) waits ~40 ms for the peer's delayed ACK.
    const sock = (socket = net.connect({ host: address.address, port: ssh.port, noDelay: true }));
    await Promise.race([
      new Promise<void>((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException): void =>
          reject(
            dialError(
              'unreachable',
              `cannot connect to ${address.address} (${err.code ?? err.message})`,
              err,
            ),
          );
        sock.once('connect', resolve).once('error', onError);
        detach.push(() => sock.removeListener('connect', resolve).removeListener('error', onError));
      }),
      failed,
    ]);

    stage = 'handshake';
    const conn = (client = new Client());
    const verifyHostKey = (key: Buffer): boolean => {
      stage = 'hostkey';
      const keyType = keyTypeOf(key) ?? 'unknown';
      const where = `known_hosts ${ssh.knownHostsFile}`;
      if (knownHosts instanceof Error) {
        fail(
          dialError(
            'host_key_unknown',
            `host key unknown (${where} unreadable: ${knownHosts.message})`,
          ),
        );
        return false;
      }
      const verdict = checkHostKey(knownHosts, ssh.host, ssh.port, keyType, key);
      if (verdict === 'match') {
        stage = 'handshake'; // the key exchange still has to finish
        return true;
      }
      fail(
        verdict === 'mismatch'
          ? dialError('host_key_mismatch', `host key mismatch (${where})`)
          : dialError('host_key_unknown', `host key unknown (${keyType}, not in ${where})`),
      );
      return false;
    };
    const agent = process.env.SSH_AUTH_SOCK;
    const authMethods: (PublicKeyAuthMethod | AgentAuthMethod)[] = [
      ...clientKeys.map((k) => ({ type: 'publickey' as const, username: ssh.user, key: k.key })),
      ...(agent === undefined || agent === ''
        ? []
        : [{ type: 'agent' as const, username: ssh.user, agent }]),
    ];
    const config: ConnectConfig = {
      sock,
      username: ssh.user,
      hostVerifier: verifyHostKey,
      // ssh2's own handshake-and-auth timer; ours fires at the same deadline.
      readyTimeout: Math.max(1, timeoutMs - (Date.now() - started)),
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
    await Promise.race([
      new Promise<void>((resolve, reject) => {
        const onError = (err: Ssh2Error): void => {
          if (err.level === 'agent') return; // ssh2 goes on with the next method
          reject(classifySsh2Error(err, stage, dialError, ssh.user, methods));
        };
        const onClose = (): void =>
          reject(dialError('protocol_error', `connection closed during ${stage}`));
        const onHandshake = (): void => {
          stage = 'auth';
        };
        conn
          .on('error', onError)
          .once('close', onClose)
          .once('handshake', onHandshake)
          .once('ready', resolve);
        detach.push(() =>
          conn
            .removeListener('error', onError)
            .removeListener('close', onClose)
            .removeListener('handshake', onHandshake)
            .removeListener('ready', resolve),
        );
        conn.connect(config);
      }),
      failed,
    ]);

    stage = 'forward';
    const channel = await Promise.race([
      new Promise<ClientChannel>((resolve, reject) => {
        const onClose = (): void =>
          reject(dialError('protocol_error', 'connection closed during forward'));
        conn.once('close', onClose);
        detach.push(() => conn.removeListener('close', onClose));
        conn.openssh_forwardOutStreamLocal(target.socketPath, (err, stream) => {
          if (err === undefined || err === null) resolve(stream);
          else reject(forwardError(err, target.socketPath, dialError));
        });
      }),
      failed,
    ]);
    return linkOver(channel, conn, sock);
  } catch (err) {
    // ssh2 keeps reporting on a client we gave up (its ready timer, "Connection lost before
    // handshake"); an 'error' without a listener would crash the process.
    client?.on('error', ignore);
    client?.end();
    socket?.destroy();
    throw err instanceof DialError
      ? err
      : dialError('protocol_error', `unexpected failure during ${stage}`, err);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    for (const undo of detach) undo();
  }
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

/** known_hosts entries, or the reason the file could not be read (that host is then unknown). */
async function readKnownHosts(ssh: SshTarget): Promise<KnownHostEntry[] | Error> {
  try {
    return parseKnownHosts(await readFile(ssh.knownHostsFile, 'utf8'));
  } catch (err) {
    return new Error((err as NodeJS.ErrnoException).code ?? 'unreadable');
  }
}

interface ClientKey {
  readonly path: string;
  readonly key: ParsedKey;
}

// ssh(1)'s default identities, tried when the URI names no key file (uri.ts: SshTarget.keyFile).
const DEFAULT_IDENTITIES = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

/**
 * The client keys, read now so that a rotated key is picked up. The named key file must be
 * usable; default identities that are missing or need a passphrase are skipped, as ssh(1)
 * skips them in batch mode. Messages name the file, never its content.
 */
async function readClientKeys(ssh: SshTarget): Promise<ClientKey[] | Error> {
  if (ssh.keyFile !== undefined) {
    const key = await readClientKey(ssh.keyFile);
    return key instanceof Error ? key : [key];
  }
  const home = path.join(os.homedir(), '.ssh');
  const keys = await Promise.all(
    DEFAULT_IDENTITIES.map((name) => readClientKey(path.join(home, name))),
  );
  return keys.filter((k): k is ClientKey => !(k instanceof Error));
}

async function readClientKey(file: string): Promise<ClientKey | Error> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    return new Error(
      `cannot read key file ${file} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`,
    );
  }
  const parsed = utils.parseKey(bytes);
  const key = Array.isArray(parsed) ? (parsed[0] as ParsedKey | undefined) : parsed;
  if (key === undefined || key instanceof Error || !key.isPrivateKey()) {
    return new Error(
      `key file ${file} holds no usable private key (passphrases are not supported)`,
    );
  }
  return { path: file, key };
}

/**
 * The link over an open channel. One channel per SSH connection: when either ends, both go.
 * If the SSH connection dies, ssh2 ends the channel ('end', then 'close'); an error that
 * killed it is re-emitted on the channel when someone listens for it.
 */
function linkOver(
  channel: ClientChannel,
  client: InstanceType<typeof Client>,
  socket: net.Socket,
): Link {
  let closed = false;
  const close = (): void => {
    if (closed) return;
    closed = true;
    channel.close();
    client.end();
    socket.destroy();
  };
  client.on('error', (err: Error) => {
    if (!closed && channel.listenerCount('error') > 0) channel.emit('error', err);
  });
  client.once('close', close);
  channel.once('close', close);
  joinWrites(channel);
  return { stream: channel, close };
}

// Frames written while the RPC client has the channel corked (calls made in one tick) would
// each become an SSH packet of their own: an ssh2 channel has no _writev, so a Writable hands
// them to _write one by one. Joined, they are one packet: one encryption, one write syscall, one
// read for sshd and libvirtd (bench/queue: 6.1 → 4.2 writes per delete). Large chunks (an
// upload's 256 KiB frames) are not copied together.
const JOIN_MAX_BYTES = 64 * 1024;

interface ChannelWrites {
  _write(chunk: Buffer, encoding: string, callback: (err?: Error | null) => void): void;
  _writev?: (
    chunks: readonly { chunk: Buffer | string; encoding: BufferEncoding }[],
    callback: (err?: Error | null) => void,
  ) => void;
}

export function joinWrites(channel: ClientChannel): void {
  const target = channel as unknown as ChannelWrites;
  const write = target._write.bind(target);
  target._writev = (chunks, callback) => {
    const buffers = chunks.map(({ chunk, encoding }) =>
      typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk,
    );
    const total = buffers.reduce((sum, b) => sum + b.length, 0);
    if (total <= JOIN_MAX_BYTES) {
      write(Buffer.concat(buffers, total), 'buffer', callback);
      return;
    }
    let next = 0;
    const writeNext = (err?: Error | null): void => {
      const buffer = buffers[next++];
      if (err || buffer === undefined) callback(err);
      else write(buffer, 'buffer', writeNext);
    };
    writeNext();
  };
}
