// vitest globalSetup: a private redis-server for the whole run, on a free loopback port, with
// the settings SPEC §8 asks of a production Redis (noeviction) and nothing written to disk. Its
// URL reaches every test file and every child process as REDIS_URL. A REDIS_URL already set
// (another Redis on purpose) is used as it is. On a machine where a Docker engine answers,
// testcontainers could serve here instead; none runs on these machines (HOST-SETUP.md).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { redisServerArgs } from './redis.js';
import { freePort } from './sshd.js';

let server: ChildProcess | undefined;
let dir: string | undefined;

export async function setup(): Promise<void> {
  if (process.env['REDIS_URL'] !== undefined) return;
  const port = await freePort();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-redis-'));
  server = spawn('redis-server', redisServerArgs(port, dir), { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    probe.on('error', () => undefined); // refused until the server listens: expected
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`redis-server on port ${port} did not answer: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      probe.disconnect();
    }
  }
  process.env['REDIS_URL'] = url;
}

export function teardown(): void {
  server?.kill('SIGTERM');
  if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
}
