// Helpers for the worker fault tests (test/integration/worker-faults-*.test.ts): an image of its
// own whose download stalls until the test lets it go, an sshd listener stopped without the
// harness's teardown (so sshd.restart() brings it back on the same port), polling, and the
// removal of one instance's domain and volumes with virsh.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import type { QueueFleet } from './queue-fleet.js';
import type { Sshd } from './sshd.js';
import { virsh } from './virsh.js';

const run = promisify(execFile);

export interface StallingImage {
  /** The image's name in the config. */
  readonly name: string;
  /** Its entry for the config's `images`. */
  readonly config: { readonly url: string; readonly sha256: string; readonly format: 'qcow2' };
  /** `kvm2-base-<sha256>.qcow2`, and its marker with `.sha256` appended. */
  readonly baseVolume: string;
  readonly markerVolume: string;
  /** Resolves when a download has sent `afterBytes` and waits for release(). */
  readonly reached: Promise<void>;
  /** Lets every stalled and future download go on. */
  release(): void;
}

/**
 * A qcow2 image of its own digest (so its own base volume, never cached before the test),
 * served at `/<label>.qcow2`: every GET stalls after `afterBytes` until release() (at most
 * `timeoutMs`, then the server cuts the connection).
 */
export async function stallingImage(
  fleet: QueueFleet,
  label: string,
  options: { readonly afterBytes?: number; readonly timeoutMs?: number } = {},
): Promise<StallingImage> {
  const file = path.join(fleet.dir, `${label}.qcow2`);
  // A random virtual size gives the header, so the digest, to this image alone; under 1 GiB,
  // the fleets' disk (TEST_DEFAULTS.diskGiB): a create refuses a disk smaller than its image.
  const sizeKiB = 32_768 + Math.floor(Math.random() * 1_000_000);
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', file, `${sizeKiB}K`]);
  const sha256 = (await run('sha256sum', [file])).stdout.split(' ')[0] ?? '';
  let release = (): void => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reach = (): void => undefined;
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  fleet.images.serve(`/${label}.qcow2`, {
    file,
    stall: {
      afterBytes: options.afterBytes ?? 64 * 1024,
      until: () => {
        reach();
        return gate;
      },
      timeoutMs: options.timeoutMs ?? 180_000,
    },
  });
  const baseVolume = `kvm2-base-${sha256}.qcow2`;
  return {
    name: label,
    config: { url: fleet.images.url(`/${label}.qcow2`), sha256, format: 'qcow2' },
    baseVolume,
    markerVolume: `${baseVolume}.sha256`,
    reached,
    release: () => release(),
  };
}

/**
 * Stops the sshd listener and its sessions but keeps its directory, so `sshd.restart()` starts
 * it again on the same port (sshd.stop() would remove the directory for good). Resolves once
 * the port refuses connections.
 */
export async function stopSshdListener(sshd: Sshd): Promise<void> {
  await sshd.killSessions();
  const pid = Number((await readFile(path.join(sshd.dir, 'sshd.pid'), 'utf8')).trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no sshd pid in ${sshd.dir}/sshd.pid`);
  process.kill(pid, 'SIGTERM');
  await waitUntil(
    async () => !(await accepts(sshd.port)) && !(await alive(pid)),
    10_000,
    `sshd (pid ${pid}) to stop listening on port ${sshd.port}`,
  );
}

async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // A zombie (state Z) is gone for our purposes; the harness reaps it.
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Polls `check` every `everyMs` until it is true; throws naming `what` after `timeoutMs`. */
export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  what: string,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Removes an instance's domain (with its NVRAM), overlay and seed with virsh; quiet when gone. */
export async function removeInstance(name: string): Promise<void> {
  await virsh(['destroy', name]).catch(() => undefined);
  await virsh(['undefine', '--nvram', name]).catch(() => undefined);
  for (const vol of [`kvm2-${name}.qcow2`, `kvm2-${name}-seed.iso`]) {
    await virsh(['vol-delete', '--pool', 'default', vol]).catch(() => undefined);
  }
}

export interface TcpProxy {
  readonly port: number;
  /** Cuts every connection and refuses new ones: to its clients, the server went away. */
  cut(): Promise<void>;
  /**
   * From now on nothing crosses, in either direction, and the sockets stay open: the server
   * neither answers nor resets (hung, or a partition without RST), which cut() does not show.
   */
  stall(): void;
  /**
   * Like stall(), but what is sent meanwhile is held and crosses at resume(): a server that
   * hangs for a while (a long-running script, a paused VM) and then answers everything.
   */
  hold(): void;
  /** Lets bytes cross again (sent while stalled: gone, as on a lossy link; while held: sent). */
  resume(): void;
}

/** A loopback TCP proxy to `127.0.0.1:targetPort`, for outages of a real server (Redis). */
export async function tcpProxy(targetPort: number): Promise<TcpProxy> {
  let stalled = false;
  let held: (() => void)[] | undefined;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined); // the other side goes with it
    }
    const forward = (to: net.Socket) => (d: Buffer) => {
      if (held !== undefined) held.push(() => to.write(d));
      else if (!stalled) to.write(d);
    };
    client.on('data', forward(upstream));
    upstream.on('data', forward(client));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    async cut() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    stall() {
      stalled = true;
    },
    hold() {
      held ??= [];
    },
    resume() {
      stalled = false;
      const sends = held ?? [];
      held = undefined;
      for (const send of sends) send();
    },
  };
}
