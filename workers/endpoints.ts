// The worker's own endpoints (SPEC §8): /healthz (the process answers), /readyz (Redis
// reachable, workers running, not shutting down) and /metrics (Prometheus text). They serve
// from the process's start, before the runtime's (which waits for Redis) is done.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WorkerRuntime } from './runtime.js';

export interface Endpoints {
  readonly url: string;
  close(): Promise<void>;
}

/** What the endpoints report: a runtime, or the process while its runtime starts. */
export type EndpointSource = Pick<WorkerRuntime, 'ready' | 'metrics'>;

export async function serveEndpoints(
  source: EndpointSource,
  listen: { readonly host: string; readonly port: number },
): Promise<Endpoints> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const ready = source.ready();
      res
        .writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' })
        .end(ready ? 'ready\n' : 'not ready\n');
    } else if (path === '/metrics') {
      res
        .writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
        .end(source.metrics.render());
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
