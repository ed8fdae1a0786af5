// A private OpenSSH sshd on a free loopback port, for integration tests (HOST-SETUP.md, "sshd
// on loopback for tests"). Everything it needs lives in a fresh temporary directory: host and
// client keys made with ssh-keygen, sshd_config, authorized_keys, known_hosts, pid file and log.
// Root's own ~/.ssh is never touched. Needs root (the daemon logs in as root) and /usr/sbin/sshd.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { formatKnownHostsLine } from '../../src/libvirt/transport/known-hosts.js';
import { accepts, freePort, LOOPBACK as HOST } from './loopback.js';
import { descendants, signal } from './proc-tree.js';
import { makeKeyPair, type KeyPair, type KeyType } from './ssh-keys.js';
import { heldTcpSockets, type HeldTcpSocket } from './tcp-nodelay.js';

// What the daemon's users name besides it: key types and pairs (makeKey), and a port nobody
// listens on (a URI to a closed port).
export { freePort } from './loopback.js';
export type { KeyPair, KeyType } from './ssh-keys.js';

const SSHD = '/usr/sbin/sshd';
const START_TIMEOUT_MS = 5_000;
const BIND_ATTEMPTS = 5;

export interface StartSshdOptions {
  /** Host key types, one key each. Default `['ed25519']`. */
  readonly hostKeyTypes?: readonly KeyType[];
  /**
   * sshd_config lines before the harness's own: sshd keeps the first value of a keyword, so
   * these override it (e.g. `MaxSessions 0`, `LogLevel DEBUG1`).
   */
  readonly extraConfig?: readonly string[];
}

export interface Sshd {
  readonly host: string;
  readonly port: number;
  readonly dir: string;
  /** The authorised client key (ed25519). */
  readonly clientKey: KeyPair;
  readonly clientKeyPath: string;
  /** The keys sshd serves now. */
  readonly hostKeys: readonly KeyPair[];
  /** known_hosts with the host keys, plain names (`[127.0.0.1]:PORT`). */
  readonly knownHostsPath: string;
  /** The same entries with hashed names, as `ssh-keygen -H` writes them. */
  readonly hashedKnownHostsPath: string;
  readonly logPath: string;
  /** e.g. `qemu+ssh://root@127.0.0.1:PORT/system?keyfile=…&known_hosts=…`; params override. */
  uri(
    uriPath?: string,
    params?: Readonly<Record<string, string>>,
    driver?: 'qemu' | 'test',
  ): string;
  /** A new key pair in the temporary directory (not authorised). */
  makeKey(name: string, type?: KeyType): Promise<KeyPair>;
  /** Replaces authorized_keys with exactly these keys. */
  authorize(...keys: KeyPair[]): Promise<void>;
  /** Writes a known_hosts file for this host and port, one line per key. */
  writeKnownHosts(
    file: string,
    keys: readonly KeyPair[],
    options?: { hashed?: boolean },
  ): Promise<void>;
  /** Serves a new ed25519 host key; the known_hosts files keep the old one. */
  rotateHostKey(): Promise<KeyPair>;
  /** Ends every SSH session (the connection processes), leaving the listener up. */
  killSessions(): Promise<void>;
  /** How many SSH sessions (connection processes) are alive. */
  sessionCount(): Promise<number>;
  /** The connected TCP sockets sshd's processes hold, with TCP_NODELAY as sshd set it. */
  heldSockets(): Promise<HeldTcpSocket[]>;
  restart(): Promise<void>;
  /** Stops the daemon and its sessions (the port refuses connections); `up` starts it again. */
  down(): Promise<void>;
  /** Starts the daemon again on the same port, with the same keys. */
  up(): Promise<void>;
  /** Kills sshd and its sessions, waits for them, removes the temporary directory. */
  stop(): Promise<void>;
}

export async function startSshd(options: StartSshdOptions = {}): Promise<Sshd> {
  await mkdir('/run/sshd', { recursive: true }); // sshd's privilege separation directory
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-sshd-'));
  try {
    const [clientKey, ...hostKeys] = await Promise.all([
      makeKeyPair(dir, 'client', 'ed25519'),
      ...(options.hostKeyTypes ?? ['ed25519']).map((type, i) =>
        makeKeyPair(dir, `host-${i}-${type}`, type),
      ),
    ]);
    if (clientKey === undefined) throw new Error('no client key');
    const sshd = new SshdProcess(dir, clientKey, hostKeys, options.extraConfig ?? []);
    await sshd.authorize(clientKey);
    await sshd.launch(true);
    return sshd;
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

class SshdProcess implements Sshd {
  readonly host = HOST;
  port = 0;
  readonly knownHostsPath: string;
  readonly hashedKnownHostsPath: string;
  readonly logPath: string;
  private readonly configPath: string;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopped = false;
  private keyCount = 0;

  constructor(
    readonly dir: string,
    readonly clientKey: KeyPair,
    public hostKeys: KeyPair[],
    private readonly extraConfig: readonly string[],
  ) {
    this.knownHostsPath = path.join(dir, 'known_hosts');
    this.hashedKnownHostsPath = path.join(dir, 'known_hosts.hashed');
    this.logPath = path.join(dir, 'sshd.log');
    this.configPath = path.join(dir, 'sshd_config');
  }

  get clientKeyPath(): string {
    return this.clientKey.privatePath;
  }

  uri(
    uriPath = '/system',
    params: Readonly<Record<string, string>> = {},
    driver: 'qemu' | 'test' = 'qemu',
  ): string {
    const query = new URLSearchParams({
      keyfile: this.clientKeyPath,
      known_hosts: this.knownHostsPath,
      ...params,
    });
    return `${driver}+ssh://root@${HOST}:${this.port}${uriPath}?${query.toString()}`;
  }

  makeKey(name: string, type: KeyType = 'ed25519'): Promise<KeyPair> {
    return makeKeyPair(this.dir, `${name}-${++this.keyCount}`, type);
  }

  async authorize(...keys: KeyPair[]): Promise<void> {
    const lines = keys.map((k) => `${k.publicLine}\n`).join('');
    await writeFile(path.join(this.dir, 'authorized_keys'), lines, { mode: 0o600 });
  }

  async writeKnownHosts(
    file: string,
    keys: readonly KeyPair[],
    options: { hashed?: boolean } = {},
  ): Promise<void> {
    const lines = keys.map(
      (k) =>
        `${formatKnownHostsLine(HOST, this.port, k.blob, { hashed: options.hashed === true })}\n`,
    );
    await writeFile(file, lines.join(''));
  }

  async rotateHostKey(): Promise<KeyPair> {
    const key = await this.makeKey('host-rotated', 'ed25519');
    this.hostKeys = [key];
    await this.restart();
    return key;
  }

  async killSessions(): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    const sessions = await descendants(pid);
    for (const session of sessions) signal(session, 'SIGTERM');
    await waitUntil(async () => (await this.sessionCount()) === 0, 2_000);
  }

  async sessionCount(): Promise<number> {
    const pid = this.child?.pid;
    return pid === undefined ? 0 : (await descendants(pid)).length;
  }

  async heldSockets(): Promise<HeldTcpSocket[]> {
    const pid = this.child?.pid;
    return pid === undefined ? [] : heldTcpSockets(this.port, [pid, ...(await descendants(pid))]);
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.launch(false);
  }

  down(): Promise<void> {
    return this.kill();
  }

  up(): Promise<void> {
    return this.launch(false);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    try {
      await this.kill();
    } finally {
      await rm(this.dir, { recursive: true, force: true });
    }
  }

  /** Starts sshd and waits until it listens. `pickPort`: choose a new free port (and retry). */
  async launch(pickPort: boolean): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (pickPort) this.port = await freePort();
      await this.writeConfig();
      if (pickPort) {
        await this.writeKnownHosts(this.knownHostsPath, this.hostKeys);
        await this.writeKnownHosts(this.hashedKnownHostsPath, this.hostKeys, { hashed: true });
      }
      const logStart = await fileSize(this.logPath);
      const child = spawn(SSHD, ['-D', '-f', this.configPath, '-E', this.logPath], {
        stdio: 'ignore',
      });
      this.child = child;
      let exit: string | undefined;
      this.exited = new Promise((resolve) => {
        child.once('exit', (code, sig) => {
          exit = `exit ${code ?? sig}`;
          resolve();
        });
        child.once('error', (err) => {
          exit = err.message;
          resolve();
        });
      });
      const listening = `Server listening on ${HOST} port ${this.port}.`;
      const log = async (): Promise<string> =>
        (await readFile(this.logPath, 'utf8').catch(() => '')).slice(logStart);
      await waitUntil(
        async () => exit !== undefined || (await log()).includes(listening),
        START_TIMEOUT_MS,
      );
      if (exit === undefined && (await accepts(this.port))) return;
      await this.kill();
      const text = await log();
      // Another process took the port between our probe and sshd's bind: try another one.
      if (pickPort && attempt < BIND_ATTEMPTS && /Address already in use/.test(text)) continue;
      throw new Error(
        `sshd on port ${this.port} did not start (${exit ?? 'not listening'}); its log:\n${text}`,
      );
    }
  }

  private async writeConfig(): Promise<void> {
    const config = [
      ...this.extraConfig,
      `Port ${this.port}`,
      `ListenAddress ${HOST}`,
      ...this.hostKeys.map((k) => `HostKey ${k.privatePath}`),
      `PidFile ${path.join(this.dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${path.join(this.dir, 'authorized_keys')}`,
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'AllowStreamLocalForwarding yes',
      'StrictModes no',
      'UsePAM no',
      'PrintMotd no',
      'LogLevel VERBOSE',
      // sshd runs each session's command through the user's shell, and Debian's bash reads
      // ~/.bashrc for a command sshd started when it is a top-level shell (SHLVL below 2):
      // this machine's root runs `pyenv init` there, ~0.65 s of CPU a session, and every dial
      // (kvm2's `exec true`, virsh's proxy) would leave one such shell behind. A session starts
      // one level down, so its shell reads no rc file (test/integration/ssh-harness-shell).
      'SetEnv SHLVL=1',
      '',
    ].join('\n');
    await writeFile(this.configPath, config);
  }

  /** SIGTERM to the sessions, then the listener; waits for the listener to exit. */
  private async kill(): Promise<void> {
    const child = this.child;
    if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    // Each session called setsid(), so a process-group kill would miss them: walk /proc.
    // Sessions first, and let the listener reap them, so no zombie outlives the harness.
    const pid = child.pid;
    for (const session of await descendants(pid)) signal(session, 'SIGTERM');
    await waitUntil(async () => (await descendants(pid)).length === 0, 1_000);
    child.kill('SIGTERM');
    await this.exited;
    this.child = undefined;
  }
}

async function fileSize(file: string): Promise<number> {
  return (await readFile(file).catch(() => Buffer.alloc(0))).length;
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
