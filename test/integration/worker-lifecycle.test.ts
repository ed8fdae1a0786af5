// A worker process's start and end when Redis is not there (docs/workers.md, "Shutdown" and
// "Endpoints"): the process is gone within worker.shutdownTimeout + 5 s of SIGTERM during an
// outage, with nothing of its own left holding the event loop open; /healthz answers while a
// start waits for Redis; a signal during the start ends it. Real worker processes from the
// compiled tree, real Redis behind a TCP proxy that the test cuts. No libvirt host is dialed:
// the one configured host's socket does not exist, and no host job is queued.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { built, ROOT } from '../harness/build.js';
import { sleep, tcpProxy, waitUntil } from '../harness/fault-kit.js';
import { freePort } from '../harness/loopback.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

/** The worker's graceful bound in these tests: no job runs, so there is nothing to wait for. */
const SHUTDOWN_TIMEOUT_MS = 500;
/** docs/workers.md: gone within shutdownTimeout plus the teardown's 5 s. */
const EXIT_BOUND_MS = SHUTDOWN_TIMEOUT_MS + 5_000;

interface LogLine {
  readonly msg?: string;
  readonly [key: string]: unknown;
}

interface Spawned {
  readonly child: ChildProcess;
  readonly logs: LogLine[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  stderr(): string;
  waitForLog(match: (l: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
}

let scope: RedisScope;
let dir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  scope = await redisScope('wlife');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-wlife-'));
});

afterEach(() => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

afterAll(async () => {
  await scope?.cleanup();
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
});

function writeConfig(redisUrl: string, listen = '127.0.0.1:0'): string {
  const file = path.join(dir, `config-${Math.random().toString(36).slice(2, 8)}.yaml`);
  const config = {
    redis: { url: redisUrl, prefix: scope.prefix },
    hosts: [
      { name: 'hv1', uri: `qemu+unix:///system?socket=${dir}/absent-sock`, network: 'default' },
    ],
    events: { watch: false },
    health: { every: '600s', timeout: '10s' },
    worker: { listen, shutdownTimeout: `${SHUTDOWN_TIMEOUT_MS}ms` },
  };
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** A node process on the compiled tree, its JSON log lines collected. */
function spawnLogged(args: readonly string[], env: Record<string, string> = {}): Spawned {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'debug', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const logs: LogLine[] = [];
  let partial = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const text of lines.filter((t) => t.trim() !== '')) {
      try {
        logs.push(JSON.parse(text) as LogLine);
      } catch {
        logs.push({ msg: text });
      }
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>(
    (resolve) => child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  const waitForLog = async (match: (l: LogLine) => boolean, timeoutMs = 30_000) => {
    try {
      await waitUntil(() => logs.some(match), timeoutMs, 'a log line', 50);
    } catch {
      throw new Error(
        `no matching log line within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}; last logs: ${JSON.stringify(logs.slice(-5))}`,
      );
    }
    return logs.find(match) as LogLine;
  };
  return { child, logs, exited, waitForLog, stderr: () => stderr };
}

/**
 * runWorker alone, as `npm start` (cli/start.ts) runs it, without `kvm2 worker`'s fallback
 * (cli/main.ts exits 2 s after its command returns, whatever is left): the process ends only
 * when nothing is left holding the event loop.
 */
function spawnRunWorker(configPath: string): Spawned {
  const url = (source: string): string => pathToFileURL(built(source)).href;
  const entry = [
    `import { loadConfig } from ${JSON.stringify(url('src/provider/config/load.ts'))};`,
    `import { createLogger } from ${JSON.stringify(url('workers/logger.ts'))};`,
    `import { runWorker } from ${JSON.stringify(url('workers/process.ts'))};`,
    `const logger = createLogger({ name: 'kvm2' });`,
    `await runWorker(await loadConfig({ env: process.env }), { logger });`,
    `logger.info('runWorker returned');`,
  ].join('\n');
  return spawnLogged(['--input-type=module', '-e', entry], { KVM2_CONFIG: configPath });
}

function spawnKvm2Worker(configPath: string): Spawned {
  return spawnLogged([built('cli/main.ts'), 'worker', '--config', configPath]);
}

async function get(url: string): Promise<number | string> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await res.text();
    return res.status;
  } catch (err) {
    return String((err as Error & { cause?: Error }).cause?.message ?? err);
  }
}

const redisPort = (): number => Number(new URL(scope.url).port);

/** Redis appearing on `port`, where a worker looks for it: a forwarder to the real one. */
async function redisOn(port: number): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: redisPort() });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

describe('the configuration warnings', () => {
  it('kvm2 worker logs them at start, as config check prints them', async () => {
    const missing = path.join(dir, 'no-such-key');
    const file = path.join(dir, 'config-warnings.yaml');
    fs.writeFileSync(
      file,
      JSON.stringify({
        redis: { url: scope.url, prefix: scope.prefix },
        hosts: [
          {
            name: 'hv1',
            // Port 9 on loopback: nothing answers there, and nothing in this test dials it.
            uri: `qemu+ssh://kvm2@127.0.0.1:9/system?keyfile=${missing}&known_hosts=${missing}`,
            network: 'default',
          },
        ],
        events: { watch: false },
        health: { every: '600s', timeout: '10s' },
        worker: { listen: '127.0.0.1:0', shutdownTimeout: `${SHUTDOWN_TIMEOUT_MS}ms` },
      }),
    );
    const w = spawnKvm2Worker(file);
    const line = await w.waitForLog(
      (l) => l.level === 40 && String(l.msg).includes(`keyfile ${missing} cannot be read`),
      30_000,
    );
    expect(line.msg).toContain('kvm2.hosts[0].uri');
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
  }, 60_000);
});

describe('SIGHUP (the terminal the worker ran in closed)', () => {
  it('drains as SIGTERM does: "shutting down", "worker stopped", exit 0', async () => {
    const port = await freePort();
    const w = spawnKvm2Worker(writeConfig(scope.url, `127.0.0.1:${port}`));
    await w.waitForLog((l) => l.msg === 'worker ready');
    w.child.kill('SIGHUP');
    const exit = await w.exited;
    // Node's default for SIGHUP is an exit by the signal, nothing drained or logged.
    expect(exit.code).toBe(0);
    expect(w.logs.some((l) => l.msg === 'shutting down' && l['signal'] === 'SIGHUP')).toBe(true);
    expect(w.logs.some((l) => l.msg === 'worker stopped')).toBe(true);
  }, 60_000);
});

describe('finished jobs past their age (workers/run/retention.ts)', () => {
  it('a worker removes those of the queues it serves at start, the younger kept', async () => {
    // A failed job of 8 days and one of 6 on the host's queue (its failed jobs are kept 7
    // days), nothing running there: BullMQ alone would keep both for good.
    const failedSet = `${scope.prefix}:host.hv1:failed`;
    const now = Date.now();
    for (const [id, days] of [
      ['old-failed', 8],
      ['young-failed', 6],
    ] as const) {
      const at = now - days * 24 * 3600_000;
      await scope.redis.hset(`${scope.prefix}:host.hv1:${id}`, {
        name: 'get',
        data: '{}',
        opts: '{}',
        timestamp: at,
        finishedOn: at,
        failedReason: 'refused',
      });
      await scope.redis.zadd(failedSet, at, id);
    }
    const w = spawnKvm2Worker(writeConfig(scope.url));
    await w.waitForLog((l) => l.msg === 'retention: finished jobs past their age removed');
    expect(await scope.redis.zrange(failedSet, 0, -1)).toEqual(['young-failed']);
    expect(await scope.redis.exists(`${scope.prefix}:host.hv1:old-failed`)).toBe(0);
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    await scope.redis.del(failedSet, `${scope.prefix}:host.hv1:young-failed`);
  }, 60_000);
});

describe('a database the Redis server does not have', () => {
  it('the worker does not start: exit 1, the refusal named, nothing written to database 0', async () => {
    const databases = Number(((await scope.redis.config('GET', 'databases')) as string[])[1]);
    const url = new URL(scope.url);
    url.pathname = `/${databases}`;
    // Other tests of this file share the prefix: what they wrote is there already.
    const before = await scope.redis.keys(`${scope.prefix}*`);
    const w = spawnKvm2Worker(writeConfig(url.href));
    const exit = await Promise.race([w.exited, sleep(30_000)]);
    expect(exit, 'still running').toBeDefined();
    expect(exit?.code).toBe(1);
    expect(w.stderr()).toMatch(/refused the configured database \(ERR DB index/);
    expect(w.logs.some((l) => l.msg === 'worker ready')).toBe(false);
    expect((await scope.redis.keys(`${scope.prefix}*`)).sort()).toEqual(before.sort());
  }, 60_000);
});

describe('a Redis that stops answering without a reset', () => {
  it('/readyz turns 503 while a PING goes unanswered, and 200 once Redis answers again', async () => {
    const port = await freePort();
    const proxy = await tcpProxy(redisPort());
    const w = spawnKvm2Worker(writeConfig(`redis://127.0.0.1:${proxy.port}`, `127.0.0.1:${port}`));
    await w.waitForLog((l) => l.msg === 'worker ready');
    const readyz = (): Promise<number | string> => get(`http://127.0.0.1:${port}/readyz`);
    expect(await readyz()).toBe(200);
    // The connection stays open and ioredis stays `ready`: only the unanswered PING tells.
    proxy.hold();
    let status: number | string = 'not asked';
    await waitUntil(async () => (status = await readyz()) === 503, 20_000, '/readyz 503', 250);
    expect(w.logs.some((l) => l.msg === 'redis error')).toBe(false);
    proxy.resume();
    await waitUntil(async () => (status = await readyz()) === 200, 10_000, '/readyz 200', 250);
    expect(status).toBe(200);
    w.child.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
  }, 60_000);
});

describe('SIGTERM during a Redis outage', () => {
  it('the process exits on its own within shutdownTimeout + 5 s', async () => {
    const proxy = await tcpProxy(redisPort());
    const w = spawnRunWorker(writeConfig(`redis://127.0.0.1:${proxy.port}`));
    await w.waitForLog((l) => l.msg === 'worker ready');
    await proxy.cut();
    await w.waitForLog((l) => l.msg === 'redis error', 10_000);

    w.child.kill('SIGTERM');
    const signalledAt = Date.now();
    const exit = await Promise.race([w.exited, sleep(EXIT_BOUND_MS + 10_000)]);
    expect(
      exit,
      `still running ${EXIT_BOUND_MS + 10_000} ms after SIGTERM; last logs: ${JSON.stringify(w.logs.slice(-3))}`,
    ).toBeDefined();
    expect(exit?.code).toBe(0);
    expect((exit?.at ?? Infinity) - signalledAt).toBeLessThan(EXIT_BOUND_MS + 1_500);
    expect(w.logs.some((l) => l.msg === 'worker stopped')).toBe(true);
    expect(w.logs.some((l) => l.msg === 'runWorker returned')).toBe(true);
  }, 60_000);
});

describe('a start that waits for Redis', () => {
  it('/healthz answers 200 and /readyz 503 while Redis is unreachable', async () => {
    const port = await freePort();
    const closed = await freePort(); // nothing listens there: Redis is down
    const w = spawnKvm2Worker(writeConfig(`redis://127.0.0.1:${closed}`, `127.0.0.1:${port}`));
    let healthz: number | string = 'not asked';
    await waitUntil(
      async () => {
        healthz = await get(`http://127.0.0.1:${port}/healthz`);
        return healthz === 200 || w.child.exitCode !== null;
      },
      15_000,
      '/healthz',
    ).catch(() => undefined);
    expect(healthz, 'GET /healthz while Redis is down').toBe(200);
    expect(await get(`http://127.0.0.1:${port}/readyz`)).toBe(503);
    expect(w.logs.some((l) => l.msg === 'worker ready')).toBe(false);
  }, 60_000);

  it('a SIGTERM during the start stops it: the process exits 0 at once', async () => {
    const closed = await freePort();
    const w = spawnKvm2Worker(writeConfig(`redis://127.0.0.1:${closed}`));
    await w.waitForLog((l) => l.msg === 'redis error', 15_000);
    w.child.kill('SIGTERM');
    const signalledAt = Date.now();
    const exit = await Promise.race([w.exited, sleep(EXIT_BOUND_MS + 10_000)]);
    expect(exit, 'still running after SIGTERM').toBeDefined();
    expect({ code: exit?.code, signal: exit?.signal }).toEqual({ code: 0, signal: null });
    expect((exit?.at ?? Infinity) - signalledAt).toBeLessThan(EXIT_BOUND_MS);
    expect(w.logs.some((l) => l.msg === 'shutting down')).toBe(true);
  }, 60_000);

  it('once Redis comes back, the start completes and /readyz turns 200', async () => {
    const port = await freePort();
    const proxyPort = await freePort();
    const w = spawnKvm2Worker(writeConfig(`redis://127.0.0.1:${proxyPort}`, `127.0.0.1:${port}`));
    await w.waitForLog((l) => l.msg === 'redis error', 15_000);
    expect(await get(`http://127.0.0.1:${port}/readyz`)).toBe(503);
    const redis = await redisOn(proxyPort);
    try {
      await w.waitForLog((l) => l.msg === 'worker ready', 30_000);
      expect(await get(`http://127.0.0.1:${port}/readyz`)).toBe(200);
      w.child.kill('SIGTERM');
      expect((await w.exited).code).toBe(0);
    } finally {
      await redis.close();
    }
  }, 60_000);
});
