// The abandon policy and keepalive against the real libvirtd, with a proxy in front of it that
// holds the daemon's replies back: the one fault the real daemon cannot show on demand.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LibvirtConnection } from '../../src/libvirt/connection.js';
import { CallAbortedError, LinkInterruptedError } from '../../src/libvirt/errors.js';
import { HostTable } from '../../src/libvirt/host-table.js';
import {
  ConnectGetHostname,
  ConnectGetLibVersion,
  DomainLookupByName,
  StoragePoolLookupByName,
  StorageVolCreateXML,
  StorageVolDelete,
  StorageVolDownload,
} from '../../src/libvirt/protocol.gen.js';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import { startStallingProxy, type StallingProxy } from '../fakes/stalling-proxy.js';
import { waitUntil } from '../harness/fault-kit.js';
import { uniqueName } from '../harness/virsh.js';

let proxy: StallingProxy;
beforeEach(async () => {
  proxy = await startStallingProxy();
});
afterEach(async () => {
  await proxy.close();
});

const target = () => parseLibvirtUri(`qemu+unix:///system?socket=${proxy.socketPath}`);

describe('abandon policy', () => {
  it('a call whose signal fires mid-flight kills the link; the others fail once as interrupted; the next call redials', async () => {
    const table = new HostTable([['h', target()]]);
    try {
      await table.call('h', ConnectGetLibVersion, undefined); // dial and open
      expect(proxy.accepted).toBe(1);
      proxy.stall();
      const ac = new AbortController();
      const abandoned = table.call('h', ConnectGetHostname, undefined, { signal: ac.signal });
      const others = [1, 2, 3].map((i) =>
        table.call('h', DomainLookupByName, { name: `kvm2-other-${i}` }),
      );
      await new Promise((r) => setTimeout(r, 50)); // all four are on the wire, held by the proxy
      ac.abort(new Error('caller gave up'));
      await expect(abandoned).rejects.toBeInstanceOf(CallAbortedError);
      await expect(abandoned).rejects.toMatchObject({
        kind: 'transient',
        code: 'ERR_LIBVIRT_CALL_ABORTED',
      });
      for (const o of others) {
        await expect(o).rejects.toBeInstanceOf(LinkInterruptedError);
        await expect(o).rejects.toMatchObject({ kind: 'transient' });
      }
      proxy.release(); // the held replies go to a socket that is gone: nobody sees them
      const { libVer } = await table.call('h', ConnectGetLibVersion, undefined);
      expect(libVer).toBeGreaterThan(0n);
      expect(proxy.accepted).toBe(2);
    } finally {
      await table.close();
    }
  });

  it('a call that outlives its budget is a transient timeout and the link is replaced', async () => {
    const table = new HostTable([['h', target()]], { callTimeoutMs: 200 });
    try {
      await table.call('h', ConnectGetLibVersion, undefined);
      proxy.stall();
      const t0 = Date.now();
      const err = await table.call('h', ConnectGetHostname, undefined).catch((e: unknown) => e);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
      expect(err).toMatchObject({ code: 'ERR_LIBVIRT_CALL_TIMEOUT', kind: 'transient' });
      proxy.release();
      await expect(table.call('h', ConnectGetHostname, undefined)).resolves.toHaveProperty(
        'hostname',
      );
      expect(proxy.accepted).toBe(2);
    } finally {
      await table.close();
    }
  });

  it('a caller waiting for a dial leaves when its own signal fires, and the dial still serves the next caller', async () => {
    const table = new HostTable([['h', target()]]);
    try {
      proxy.stall(); // the opening sequence cannot finish
      const ac = new AbortController();
      const waiting = table.shared('h', { signal: ac.signal });
      setTimeout(() => ac.abort(), 50);
      await expect(waiting).rejects.toBeInstanceOf(CallAbortedError);
      const second = table.call('h', ConnectGetLibVersion, undefined);
      proxy.release();
      await expect(second).resolves.toHaveProperty('libVer');
      expect(proxy.accepted).toBe(1); // one dial served both
    } finally {
      await table.close();
    }
  });
});

describe('closing the table', () => {
  it('ends a shared dial under way and a dedicated one, at once, and refuses later calls without dialing', async () => {
    const table = new HostTable([['h', target()]], { dialTimeoutMs: 60_000 });
    proxy.stall(); // neither opening sequence can finish
    const shared = table.shared('h');
    const dedicated = table.dedicated('h');
    await waitUntil(() => proxy.accepted === 2, 5_000, 'both dials accepted', 10);
    const t0 = Date.now();
    await table.close();
    expect(Date.now() - t0).toBeLessThan(5_000); // not the dial's 60 s budget
    await expect(shared).rejects.toMatchObject({ code: 'ERR_LIBVIRT_CLOSED', kind: 'transient' });
    await expect(dedicated).rejects.toMatchObject({ kind: 'transient' });
    await expect(table.shared('h')).rejects.toMatchObject({ code: 'ERR_LIBVIRT_CLOSED' });
    await expect(table.dedicated('h')).rejects.toMatchObject({ code: 'ERR_LIBVIRT_CLOSED' });
    await expect(table.call('h', ConnectGetLibVersion, undefined)).rejects.toMatchObject({
      code: 'ERR_LIBVIRT_CLOSED',
    });
    expect(proxy.accepted).toBe(2); // nothing dialed after the close
  });
});

describe('keepalive', () => {
  it('kills a link whose daemon falls silent', async () => {
    const conn = await LibvirtConnection.connect(target(), {
      host: 'h',
      keepalive: { intervalMs: 100, count: 3 },
    });
    const closed = new Promise<Error | undefined>((r) => conn.once('close', r));
    proxy.stall();
    const pending = conn.call(ConnectGetHostname, undefined, { timeoutMs: 60_000 });
    const t0 = Date.now();
    await expect(pending).rejects.toBeInstanceOf(LinkInterruptedError);
    await expect(pending).rejects.toThrow(/keepalive/);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(await closed).toBeInstanceOf(LinkInterruptedError);
    expect(conn.isDown).toBe(true);
  });

  it("answers the daemon's pings and pings when idle", async () => {
    // Our own interval is long, so every ping in the first seconds is the daemon's (5 s).
    const conn = await LibvirtConnection.connect(target(), {
      host: 'h',
      keepalive: { intervalMs: 5_500, count: 6 },
    });
    try {
      // The daemon pings after 5 s of quiet; our PONG follows.
      await waitUntil(
        () => proxy.keepalive.fromDaemon.includes(1) && proxy.keepalive.fromClient.includes(2),
        15_000,
        "the daemon's PING and our PONG",
        50,
      );
      await new Promise((r) => setTimeout(r, 0));
      const { hostname } = await conn.call(ConnectGetHostname, undefined);
      expect(hostname.length).toBeGreaterThan(0);
    } finally {
      await conn.close();
    }
  }, 20_000);

  it('sends its own ping when the link is idle', async () => {
    const conn = await LibvirtConnection.connect(target(), {
      host: 'h',
      keepalive: { intervalMs: 150, count: 10 },
    });
    try {
      await waitUntil(
        () => proxy.keepalive.fromClient.includes(1) && proxy.keepalive.fromDaemon.includes(2),
        5_000,
        "our PING and the daemon's PONG",
        20,
      );
      expect(conn.isDown).toBe(false);
    } finally {
      await conn.close();
    }
  });

  // libvirtd's own keepalive (5 s × 5, unchanged by the harness: it is the machine's daemon)
  // closes a client it hears nothing from for 30 s, whether or not we read what it sends.
  it("a download whose consumer lags past the daemon's 30 s keepalive keeps its link", async () => {
    const conn = await LibvirtConnection.connect(parseLibvirtUri('qemu:///system'), {
      host: 'h',
    });
    const size = 16 * 1024 * 1024;
    const name = `${uniqueName('kvm2-lag')}.raw`;
    const { pool } = await conn.call(StoragePoolLookupByName, { name: 'default' });
    const { vol } = await conn.call(StorageVolCreateXML, {
      pool,
      xml: `<volume><name>${name}</name><capacity unit='bytes'>${size}</capacity><target><format type='raw'/></target></volume>`,
      flags: 0,
    });
    try {
      let bytes = 0;
      let lagged = false;
      for await (const chunk of conn.download(StorageVolDownload, {
        vol,
        offset: 0n,
        length: 0n,
        flags: 0,
      })) {
        bytes += chunk.length;
        if (!lagged) {
          lagged = true;
          await new Promise((r) => setTimeout(r, 36_000)); // past 4 MiB queued: reads paused
        }
      }
      expect(bytes).toBe(size);
      expect(conn.isDown).toBe(false);
    } finally {
      await conn.call(StorageVolDelete, { vol, flags: 0 }).catch(() => undefined);
      await conn.close();
    }
  }, 60_000);
});
