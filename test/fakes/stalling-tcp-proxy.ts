// A TCP proxy in front of Redis that can stop forwarding without closing anything: the peer
// neither answers nor resets (a hung server, a partition with no RST), which a refused or cut
// connection (test/harness/fault-kit.ts `tcpProxy`) does not show.
import net from 'node:net';

export interface StallingTcpProxy {
  readonly port: number;
  /** From now on nothing crosses, in either direction; the sockets stay open. */
  stall(): void;
  /** Destroys every socket and stops listening. */
  close(): Promise<void>;
}

export async function stallingTcpProxy(targetPort: number): Promise<StallingTcpProxy> {
  let stalled = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined); // the other side goes with it
    }
    client.on('data', (d: Buffer) => {
      if (!stalled) upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (!stalled) client.write(d);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    stall: () => {
      stalled = true;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
