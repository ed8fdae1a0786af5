// A stream whose daemon side stops moving bytes (docs/security.md, item 2). libvirt 9.0 moves a
// volume's bytes on a thread of libvirtd (no iohelper process to stop on its own), so the daemon
// is stopped with SIGSTOP in the middle of an upload and of a download: to kvm2 that is what a
// hung pool looks like, a stream that takes or gives no more bytes on a link that stays open.
// The stream must fail as transient within its stall limit, long before keepalive (30 s) would
// notice, and the link be dropped.
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyError } from '../../src/errors/classify.js';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import { StreamStalledError } from '../../src/libvirt/errors.js';
import {
  StoragePoolLookupByName,
  StorageVolCreateXML,
  StorageVolDownload,
  StorageVolUpload,
  type NonnullStorageVol,
} from '../../src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName } from '../harness/virsh.js';

const run = promisify(execFile);
const STALL_MS = 1_500;
const VOLUME_BYTES = 512 * 1024 * 1024;

let sshd: Sshd;
/** Processes this file stopped, continued in afterAll whatever happened. */
const stopped = new Set<number>();

beforeAll(async () => {
  sshd = await startSshd();
});

afterAll(async () => {
  for (const pid of stopped) process.kill(pid, 'SIGCONT');
  await sshd?.stop();
});

/** libvirtd's pid, found by its name in /proc. */
async function libvirtdPid(): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const comm = await readFile(`/proc/${entry}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === 'libvirtd') return Number(entry);
  }
  throw new Error('libvirtd is not running (npm run setup starts it)');
}

function stop(pid: number): void {
  process.kill(pid, 'SIGSTOP');
  stopped.add(pid);
}

function resume(pid: number): void {
  process.kill(pid, 'SIGCONT');
  stopped.delete(pid);
}

async function withVolume(
  fn: (conn: LibvirtConnection, vol: NonnullStorageVol) => Promise<void>,
): Promise<void> {
  const name = `${uniqueName('kvm2-stall')}.raw`;
  const conn = await LibvirtConnection.connect(parseLibvirtUri(sshd.uri('/system')), {
    host: 'stall',
    streamStallMs: STALL_MS,
  });
  const { pool } = await conn.call(StoragePoolLookupByName, { name: 'default' });
  const { vol } = await conn.call(StorageVolCreateXML, {
    pool,
    xml: `<volume><name>${name}</name><capacity unit='bytes'>${VOLUME_BYTES}</capacity><target><format type='raw'/></target></volume>`,
    flags: 0,
  });
  try {
    await fn(conn, vol);
  } finally {
    await conn.close().catch(() => undefined);
    await run('virsh', ['-c', 'qemu:///system', 'vol-delete', '--pool', 'default', name]).catch(
      () => undefined,
    );
  }
}

/** Zeros in 1 MiB chunks; `onSent` hears the running total. */
function* zeros(total: number, onSent: (bytes: number) => void): Generator<Buffer> {
  const chunk = Buffer.alloc(1024 * 1024);
  for (let sent = 0; sent < total; sent += chunk.length) {
    yield chunk;
    onSent(sent + chunk.length);
  }
}

describe('a stream whose iohelper stops', () => {
  it('fails an upload as transient within the stall limit, and drops the link', async () => {
    const daemon = await libvirtdPid();
    await withVolume(async (conn, vol) => {
      let stoppedAt = 0;
      const upload = conn.upload(
        StorageVolUpload,
        { vol, offset: 0n, length: BigInt(VOLUME_BYTES), flags: 0 },
        zeros(VOLUME_BYTES, (sent) => {
          // Once the daemon has taken some of it.
          if (sent === 16 * 1024 * 1024) {
            stop(daemon);
            stoppedAt = performance.now();
          }
        }),
      );
      const err = await upload.then(
        () => new Error('upload finished'),
        (e: unknown) => e,
      );
      const took = performance.now() - stoppedAt;
      resume(daemon);
      expect(err).toBeInstanceOf(StreamStalledError);
      expect(err).toMatchObject({ code: 'ERR_LIBVIRT_STREAM_STALLED', kind: 'transient' });
      expect(classifyError(err)).toBe('transient');
      expect((err as Error).message).toContain(
        `StorageVolUpload moved no bytes for ${STALL_MS} ms`,
      );
      // The stall limit, measured from the last bytes the daemon took: not sooner, and well
      // before anything else (a call budget, keepalive) would have ended it.
      expect(took).toBeGreaterThanOrEqual(STALL_MS - 200);
      expect(took).toBeLessThan(STALL_MS + 10_000);
      expect(conn.isDown).toBe(true);
    });
  }, 60_000);

  it('fails a download as transient within the stall limit, and drops the link', async () => {
    const daemon = await libvirtdPid();
    await withVolume(async (conn, vol) => {
      const chunks = conn.download(StorageVolDownload, { vol, offset: 0n, length: 0n, flags: 0 });
      let received = 0;
      let stoppedAt = 0;
      const err = await (async () => {
        for await (const chunk of chunks) {
          received += chunk.length;
          if (stoppedAt === 0) {
            stop(daemon);
            stoppedAt = performance.now();
          }
        }
        return new Error('download finished');
      })().catch((e: unknown) => e);
      const took = performance.now() - stoppedAt;
      resume(daemon);
      expect(received).toBeGreaterThan(0);
      expect(received).toBeLessThan(VOLUME_BYTES);
      expect(err).toBeInstanceOf(StreamStalledError);
      expect(err).toMatchObject({ code: 'ERR_LIBVIRT_STREAM_STALLED', kind: 'transient' });
      expect(took).toBeLessThan(STALL_MS + 10_000);
      expect(conn.isDown).toBe(true);
    });
  }, 60_000);
});
