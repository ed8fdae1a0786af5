// Libvirt hosts of their own on this machine (issue #15; HOST-SETUP.md, "Several libvirt hosts
// on one machine"): each is a libvirtd (qemu driver) with its virtlogd in a mount and PID
// namespace of its own (`unshare --mount --pid --fork --mount-proc`), where a per-host
// directory is bind-mounted over /var/lib/libvirt, /etc/libvirt (libvirt.conf and nwfilter
// only: no pool, network or domain of the machine's), /var/log/libvirt, /var/cache/libvirt and
// /run. Its pool `default` and its isolated network `default` (a bridge of its own, no address)
// are its own; its domains are invisible to the machine's libvirtd and to the other hosts'.
//
// Each host is reached through an sshd of its own on a loopback port, in the machine's
// namespace: the host's /run is a directory here, so the URI names the host's socket
// (`socket=<dir>/run/libvirt/libvirt-sock`), as for any libvirtd with a socket elsewhere.
// Stopping that sshd makes the host unreachable while its libvirtd and guests run on.
//
// The namespace's first process is a shell that reaps what is orphaned in it (libvirtd
// daemonises, qemu's helpers exit) and lives until the harness SIGKILLs the unshare process
// (`--kill-child`): the kernel then kills everything in the namespace, guests included.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startSshd, type Sshd } from './sshd.js';
import { waitUntil } from './fault-kit.js';

const run = promisify(execFile);
const START_TIMEOUT_MS = 20_000;

export interface NamespaceHost {
  /** The host's name in the configuration (`h1`, `h2`, …). */
  readonly name: string;
  readonly dir: string;
  /** libvirtd's socket, seen from the machine. */
  readonly socket: string;
  readonly sshd: Sshd;
  /** The host's isolated network (`default`) and its bridge. */
  readonly network: string;
  readonly bridge: string;
  /** The configuration's `hosts[]` entry for this host, through its sshd. */
  hostConfig(extra?: Record<string, unknown>): Record<string, unknown>;
  /** virsh on this host (over its socket, not through sshd). */
  virsh(args: string[]): Promise<string>;
  /** Every domain's name on this host. */
  domains(): Promise<string[]>;
  /** Every volume's name in this host's pool. */
  volumes(): Promise<string[]>;
  /** Stops this host's libvirtd and starts it again (guests keep running). */
  restartLibvirtd(): Promise<void>;
  /** Kills the namespace (libvirtd, guests), its sshd and its bridge; removes its directory. */
  stop(): Promise<void>;
}

/** Until `check` holds (a failing virsh counts as not yet; `check` may throw to give up). */
const until = (what: string, check: () => Promise<boolean>): Promise<void> =>
  waitUntil(
    () =>
      check().catch((err: unknown) => {
        if (err instanceof StartFailed) throw err;
        return false;
      }),
    START_TIMEOUT_MS,
    `namespace host: ${what}`,
  );

/** The namespace's first process exited: waiting longer cannot help. */
class StartFailed extends Error {}

const lines = (text: string): string[] =>
  text
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/**
 * Starts `count` hosts named h1…hN. `label` makes the bridges' names (at most 15 characters)
 * and directories this run's own.
 */
export async function startNamespaceHosts(count: number, label: string): Promise<NamespaceHost[]> {
  const hosts: NamespaceHost[] = [];
  try {
    for (let i = 1; i <= count; i++) hosts.push(await startNamespaceHost(`h${i}`, label));
    return hosts;
  } catch (err) {
    await Promise.all(hosts.map((h) => h.stop()));
    throw err;
  }
}

async function startNamespaceHost(name: string, label: string): Promise<NamespaceHost> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kvm2-ns-${label}-${name}-`));
  fs.chmodSync(dir, 0o755);
  const sub = (p: string): string => {
    const d = path.join(dir, p);
    fs.mkdirSync(d, { recursive: true, mode: 0o755 });
    return d;
  };
  const [lib, etc, log, cache, runDir] = ['lib', 'etc', 'log', 'cache', 'run'].map(sub);
  sub('lib/images');
  sub('log/qemu'); // libvirtd writes the guests' logs there and does not make it first
  for (const f of ['libvirt.conf', 'libvirt-admin.conf', 'nwfilter']) {
    const from = path.join('/etc/libvirt', f);
    if (fs.existsSync(from)) fs.cpSync(from, path.join(etc ?? '', f), { recursive: true });
  }
  const socket = path.join(runDir ?? '', 'libvirt', 'libvirt-sock');
  const bridge = `k2${label.slice(0, 6)}${Math.random().toString(36).slice(2, 6)}${name}`.slice(
    0,
    15,
  );
  const init = path.join(dir, 'init.sh');
  fs.writeFileSync(
    init,
    [
      'set -e',
      'mount --make-rprivate /',
      `mount --bind ${runDir} /run`,
      'mkdir -p /run/libvirt',
      `mount --bind ${lib} /var/lib/libvirt`,
      `mount --bind ${etc} /etc/libvirt`,
      `mount --bind ${log} /var/log/libvirt`,
      `mount --bind ${cache} /var/cache/libvirt`,
      'virtlogd -d',
      'libvirtd -d',
      'set +e',
      // PID 1 of the namespace: bash reaps every child it is handed, known or not.
      'while :; do sleep 3600 & wait $!; done',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(
    'unshare',
    ['--mount', '--pid', '--fork', '--kill-child', '--mount-proc', 'bash', init],
    { stdio: ['ignore', 'ignore', fs.openSync(path.join(dir, 'init.log'), 'a')] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const uri = `qemu+unix:///system?socket=${socket}`;
  const virsh = async (args: string[]): Promise<string> =>
    (await run('virsh', ['-c', uri, '-q', ...args], { maxBuffer: 64 << 20 })).stdout;
  let sshd: Sshd | undefined;
  const stop = async (): Promise<void> => {
    await sshd?.stop();
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    await run('ip', ['link', 'del', bridge]).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(`${name}'s libvirtd answers`, async () => {
      if (child.exitCode !== null) {
        throw new StartFailed(fs.readFileSync(path.join(dir, 'init.log'), 'utf8'));
      }
      await virsh(['version']);
      return true;
    });
    await virsh(['pool-define-as', 'default', 'dir', '--target', '/var/lib/libvirt/images']);
    await virsh(['pool-start', 'default']);
    const netXml = path.join(dir, 'network.xml');
    fs.writeFileSync(
      netXml,
      `<network><name>default</name><bridge name='${bridge}' stp='off'/><dns enable='no'/></network>\n`,
    );
    await virsh(['net-define', netXml]);
    await virsh(['net-start', 'default']);
    sshd = await startSshd();
    const reached = sshd;
    return {
      name,
      dir,
      socket,
      sshd: reached,
      network: 'default',
      bridge,
      hostConfig: (extra = {}) => ({
        name,
        uri: reached.uri('/system', { socket }),
        pool: 'default',
        network: 'default',
        domainType: 'qemu',
        firmware: 'uefi',
        cpuMode: 'none',
        ...extra,
      }),
      virsh,
      domains: async () => lines(await virsh(['list', '--all', '--name'])),
      volumes: async () =>
        lines(await virsh(['vol-list', '--pool', 'default'])).map((l) => l.split(/\s+/)[0] ?? ''),
      async restartLibvirtd() {
        const pid = (await run('pgrep', ['-P', String(child.pid)])).stdout.trim();
        const inside = ['-t', pid, '-m', '-p', '--'];
        await run('nsenter', [
          ...inside,
          'sh',
          '-c',
          'pid=$(cat /run/libvirtd.pid); kill $pid; i=0; while kill -0 $pid 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; libvirtd -d',
        ]);
        await until(`${name}'s libvirtd answers again`, async () => {
          await virsh(['version']);
          return true;
        });
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
