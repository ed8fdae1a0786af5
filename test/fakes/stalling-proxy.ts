// A UNIX-socket proxy in front of the real libvirtd that can hold the daemon's replies back:
// the one fault the real daemon cannot be made to show on demand (a stalled daemon, a reply
// that arrives after its caller left). It also records the keepalive frames that cross it.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const KEEPALIVE_PROGRAM = 0x6b656570;

export interface StallingProxy {
  readonly socketPath: string;
  /** Holds everything the daemon sends until `release`. */
  stall(): void;
  release(): void;
  /** Keepalive procs seen per direction (1 = PING, 2 = PONG). */
  readonly keepalive: { fromDaemon: number[]; fromClient: number[] };
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

function scanKeepalive(chunk: Buffer, into: number[]): void {
  // Good enough for a witness: keepalive frames are 28 bytes and arrive alone when idle.
  for (let off = 0; off + 28 <= chunk.length;) {
    const len = chunk.readUInt32BE(off);
    if (len < 28 || off + len > chunk.length) return;
    if (chunk.readUInt32BE(off + 4) === KEEPALIVE_PROGRAM) into.push(chunk.readInt32BE(off + 12));
    off += len;
  }
}

export async function startStallingProxy(
  target = '/var/run/libvirt/libvirt-sock',
): Promise<StallingProxy> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-proxy-'));
  const socketPath = path.join(dir, 'libvirt-sock');
  let stalled = false;
  const held: Array<() => void> = [];
  const sockets = new Set<net.Socket>();
  const keepalive = { fromDaemon: [] as number[], fromClient: [] as number[] };
  let accepted = 0;

  const server = net.createServer((client) => {
    accepted++;
    const daemon = net.connect(target);
    sockets.add(client).add(daemon);
    client.on('data', (d: Buffer) => {
      scanKeepalive(d, keepalive.fromClient);
      daemon.write(d);
    });
    daemon.on('data', (d: Buffer) => {
      const forward = (): void => {
        scanKeepalive(d, keepalive.fromDaemon);
        if (!client.destroyed) client.write(d);
      };
      if (stalled) held.push(forward);
      else forward();
    });
    const end = (): void => {
      client.destroy();
      daemon.destroy();
    };
    client.on('close', end).on('error', end);
    daemon.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    keepalive,
    get accepted() {
      return accepted;
    },
    stall: () => {
      stalled = true;
    },
    release: () => {
      stalled = false;
      for (const f of held.splice(0)) f();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
