// What a page the operator visits can make a browser send the board (docs/security.md): a
// DNS-rebound name, a cross-origin write, an oversized page. Real board, real Redis, requests
// written byte for byte with node:http so the Host and Origin headers are what a browser sends.
import { request } from 'node:http';
import { cpuUsage } from 'node:process';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { Queue, UnrecoverableError } from 'bullmq';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Kvm2Client } from '../../queues/client.js';
import { hostQueueName } from '../../queues/names.js';
import { USER_DATA_MAX_BYTES } from '../../src/provider/core/request.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { startBoard, type BoardServer } from '../../board/server.js';
import { failOneJob, type CreateJob } from '../harness/careless-worker.js';
import { redisScope, refusedCredentials, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
let board: BoardServer;
let queue: Queue;

interface Reply {
  readonly status: number;
  readonly body: string;
}

/** One request to `base` (the board's URL) with exactly these headers. */
function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<Reply> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method, path: url.pathname + url.search, headers },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function hostOf(board: BoardServer): string {
  return new URL(board.url).host;
}

async function startOpenBoard(allowedHosts?: string[]): Promise<BoardServer> {
  const config = parseConfig({
    hosts: ['h1', 'h2'].map((name) => ({
      name,
      // One daemon a host (docs/configuration.md); these tests dial none of them.
      uri: `qemu+unix:///system?socket=/run/kvm2-absent/${name}-sock`,
      pool: 'default',
      network: 'default',
    })),
    redis: { url: scope.url, prefix: scope.prefix },
    board: allowedHosts === undefined ? {} : { allowedHosts },
  });
  return startBoard(config, {
    logger: pino({ level: 'silent' }),
    listen: { host: '127.0.0.1', port: 0 },
  });
}

beforeAll(async () => {
  scope = await redisScope('board-requests');
  board = await startOpenBoard();
  queue = new Queue(hostQueueName('h1'), { connection: scope.redis, prefix: scope.prefix });
});

afterAll(async () => {
  await Promise.allSettled([board?.close(), queue?.close()]);
  await scope?.cleanup();
});

describe('the Host header (DNS rebinding)', () => {
  it('refuses a read and a write for a name the board was not given, and the queue stays running', async () => {
    const port = new URL(board.url).port;
    const host = `rebind.attacker.example:${port}`;
    const read = await send(board.url, 'GET', '/api/queues', { host });
    expect(read.status).toBe(403);
    expect(read.body).not.toContain('host.h1');
    const write = await send(board.url, 'PUT', '/api/queues/host.h1/pause', { host });
    expect(write.status).toBe(403);
    expect(await queue.isPaused()).toBe(false);
    const page = await send(board.url, 'GET', '/', { host });
    expect(page.status).toBe(403);
  });

  it('answers its listen address, localhost and IP literals', async () => {
    const port = new URL(board.url).port;
    for (const host of [hostOf(board), `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
      const reply = await send(board.url, 'GET', '/api/queues', { host });
      expect(reply.status, host).toBe(200);
      expect(reply.body).toContain('host.h1');
    }
  });

  it('answers the names board.allowedHosts lists, exactly or under a leading-dot suffix', async () => {
    const listed = await startOpenBoard(['board.example.net', '.ops.example.org']);
    try {
      const port = new URL(listed.url).port;
      const answered = ['board.example.net', 'ops.example.org', 'a.ops.example.org'];
      for (const name of answered) {
        const reply = await send(listed.url, 'GET', '/api/queues', { host: `${name}:${port}` });
        expect(reply.status, name).toBe(200);
      }
      for (const name of ['example.net', 'xboard.example.net', 'evilops.example.org']) {
        const reply = await send(listed.url, 'GET', '/api/queues', { host: `${name}:${port}` });
        expect(reply.status, name).toBe(403);
      }
    } finally {
      await listed.close();
    }
  });

  it('refuses a request without a Host header', async () => {
    // HTTP/1.0 lets a client leave Host out; node:http adds one unless told otherwise.
    const reply = await new Promise<number>((resolve, reject) => {
      const url = new URL(board.url);
      const req = request(
        { host: url.hostname, port: url.port, path: '/api/queues', setHost: false },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    // Node's server answers 400 itself (requireHostHeader); either way nothing is served.
    expect([400, 403]).toContain(reply);
  });
});

describe('cross-origin writes', () => {
  it('refuses a write whose Origin is another site, and one a browser marks cross-site', async () => {
    const host = hostOf(board);
    const byOrigin = await send(board.url, 'PUT', '/api/queues/host.h1/pause', {
      host,
      origin: 'http://attacker.example',
    });
    expect(byOrigin.status).toBe(403);
    const bySite = await send(board.url, 'PUT', '/api/queues/host.h1/pause', {
      host,
      'sec-fetch-site': 'cross-site',
    });
    expect(bySite.status).toBe(403);
    // Another port of localhost is the same site but not the same origin.
    const samesite = await send(board.url, 'PUT', '/api/queues/host.h1/pause', {
      host,
      origin: 'http://127.0.0.1:1',
      'sec-fetch-site': 'same-site',
    });
    expect(samesite.status).toBe(403);
    expect(await queue.isPaused()).toBe(false);
  });

  it('serves a write from its own page, and one from a client that is not a browser', async () => {
    const host = hostOf(board);
    const own = await send(board.url, 'PUT', '/api/queues/host.h1/pause', {
      host,
      origin: `http://${host}`,
      'sec-fetch-site': 'same-origin',
    });
    expect(own.status).toBe(200);
    expect(await queue.isPaused()).toBe(true);
    const script = await send(board.url, 'PUT', '/api/queues/host.h1/resume', { host });
    expect(script.status).toBe(200);
    expect(await queue.isPaused()).toBe(false);
  });
});

describe('the page size', () => {
  it('refuses more jobs per page than the UI offers, and serves the UI maximum', async () => {
    const host = hostOf(board);
    const path = (n: number) =>
      `/api/queues?activeQueue=host.h1&status=latest&page=1&jobsPerPage=${n}`;
    const tooMany = await send(board.url, 'GET', path(50_000), { host });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toContain('jobsPerPage must be at most 300');
    expect((await send(board.url, 'GET', path(300), { host })).status).toBe(200);
  });
});

/** User-data at the size limit, in short lines: the most fragments the scrubbing can be given. */
function largeUserData(): string {
  const lines = ['#cloud-config', 'runcmd:'];
  let size = 0;
  for (let i = 0; ; i += 1) {
    const line = `  - echo step-${String(i).padStart(6, '0')}`;
    if (size + line.length + 1 > USER_DATA_MAX_BYTES - 64) break;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

/** CPU time this process spends per poll of `path` (the board runs in this process). */
async function cpuPerPoll(path: string, polls: number): Promise<number> {
  const host = hostOf(board);
  await send(board.url, 'GET', path, { host });
  const before = cpuUsage();
  for (let i = 0; i < polls; i += 1) {
    const reply = await send(board.url, 'GET', path, { host });
    expect(reply.status).toBe(200);
    expect(reply.body).not.toContain('step-000123');
  }
  const spent = cpuUsage(before);
  return (spent.user + spent.system) / 1000 / polls;
}

describe('the cost of a poll', () => {
  it('scrubs a failed job with the largest user-data once, not on every poll', async () => {
    const userData = largeUserData();
    const client = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
    try {
      await client.create({ host: 'h1', name: 'big-1', image: 'debian-12', userData });
      // The same size in two lines: the scrubbing has two fragments to cut, not tens of thousands.
      const oneLine = `#cloud-config\nbootcmd: [${'a'.repeat(userData.length - 40)}]`;
      await client.create({ host: 'h2', name: 'plain-1', image: 'debian-12', userData: oneLine });
    } finally {
      await client.close();
    }
    // A careless worker quoting the user-data in its error.
    const quote = (job: CreateJob) =>
      Promise.reject(
        new UnrecoverableError(`cloud-init rejected user-data:\n${job.data.userData}`),
      );
    await failOneJob(scope, 'h1', quote);
    await failOneJob(scope, 'h2', quote);
    const pathOf = (host: string) =>
      `/api/queues?activeQueue=host.${host}&status=failed&page=1&jobsPerPage=10`;
    for (const host of ['h1', 'h2']) {
      const first = await send(board.url, 'GET', pathOf(host), { host: hostOf(board) });
      expect(first.body).toContain('[redacted]');
      expect(first.body).not.toContain('aaaaaaaaaaaaaaaa');
    }
    // The baseline fetches and renders as many bytes. Rebuilding every fragment of the
    // user-data and trying each against the text on each poll costs ~2.5x the baseline's CPU
    // here, all of it blocking the board. Both are measured in this run.
    const baseline = await cpuPerPoll(pathOf('h2'), 10);
    const secret = await cpuPerPoll(pathOf('h1'), 10);
    expect(secret, `baseline ${baseline.toFixed(1)} ms`).toBeLessThan(baseline * 1.5 + 5);
  });
});

describe('a Redis that refuses the credentials', () => {
  it("writes the password to neither the board's log nor stderr", async () => {
    // ioredis hangs the AUTH command, password included, on its error; BullMQ prints the
    // errors of a Queue that nobody listens to on stderr.
    const { url, password } = refusedCredentials(scope.url);
    let logged = '';
    const logger = pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logged += chunk.toString();
          done();
        },
      }),
    );
    let printed = '';
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      printed += String(chunk);
      return true;
    });
    const consoleError = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
      printed += args.map((a) => (typeof a === 'string' ? a : inspect(a, { depth: 10 }))).join(' ');
    });
    let refused: BoardServer | undefined;
    try {
      refused = await startBoard(
        parseConfig({
          hosts: [
            {
              name: 'h1',
              uri: 'qemu+unix:///system?socket=/run/kvm2-absent/h1-sock',
              network: 'default',
            },
          ],
          redis: { url, prefix: scope.prefix },
        }),
        { logger, listen: { host: '127.0.0.1', port: 0 } },
      );
      const fleet = await send(refused.url, 'GET', '/fleet', {
        host: hostOf(refused),
        accept: 'text/html',
      });
      expect(fleet.status).toBe(500);
      // Long enough for ioredis to try again and for BullMQ's queues to report it.
      await new Promise((resolve) => setTimeout(resolve, 4_000));
    } finally {
      await refused?.close();
      stderr.mockRestore();
      consoleError.mockRestore();
    }
    expect(logged).toContain('WRONGPASS');
    expect(logged).not.toContain(password);
    expect(printed).not.toContain(password);
    // Nor any of the errors themselves: the board logs them, as JSON lines.
    expect(printed).not.toContain('WRONGPASS');
  }, 30_000);
});
