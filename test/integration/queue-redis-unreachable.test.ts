// The producer when Redis cannot be reached: how fast it gives up and what its error says.
import net from 'node:net';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Kvm2Client } from '../../queues/client.js';
import { Kvm2Error } from '../../src/errors/error.js';
import { request } from '../harness/queue-requests.js';
import { redisScope, refusedCredentials, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;

beforeAll(async () => {
  scope = await redisScope('queue-unreachable');
});

afterAll(async () => {
  await scope.cleanup();
});

describe('Redis unreachable', () => {
  let port = 0;

  beforeAll(async () => {
    // A port that was just free and is closed again: connections are refused.
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const closing: Kvm2Client[] = [];
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((c) => c.close()));
  });

  it('fails fast with a clear error and no password in it', async () => {
    const offline = new Kvm2Client({
      redisUrl: `redis://:s3cret@127.0.0.1:${port}`,
      prefix: scope.prefix,
    });
    closing.push(offline);
    const started = Date.now();
    const err = await offline.create(request('web-1')).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(err).toBeInstanceOf(Kvm2Error);
    expect((err as Kvm2Error).code).toBe('ERR_REDIS_UNAVAILABLE');
    expect((err as Kvm2Error).kind).toBe('transient');
    expect((err as Kvm2Error).message).toContain(`127.0.0.1:${port}`);
    expect((err as Kvm2Error).message).not.toContain('s3cret');

    // And again while ioredis reconnects in the background.
    const again = Date.now();
    await expect(offline.delete('h1/web-1')).rejects.toMatchObject({
      code: 'ERR_REDIS_UNAVAILABLE',
    });
    expect(Date.now() - again).toBeLessThan(2_000);
  });
});

describe('Redis refusing the credentials', () => {
  it('the error, printed whole with its cause, carries no password', async () => {
    const { url, password } = refusedCredentials(scope.url);
    const refused = new Kvm2Client({ redisUrl: url, prefix: scope.prefix });
    try {
      const err = await refused.delete('h1/web-1').catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_REDIS_UNAVAILABLE' });
      expect((err as Error).message).toMatch(/refused the credentials/);
      expect(inspect(err, { depth: 10 })).not.toContain(password);
      expect(JSON.stringify(err)).not.toContain(password);
    } finally {
      await refused.close();
    }
  });
});

describe('a database the server does not have', () => {
  it('is refused with ERR_CONFIG, every call, and nothing lands in database 0', async () => {
    // ioredis emits the SELECT's refusal and goes on, on database 0.
    const databases = Number(((await scope.redis.config('GET', 'databases')) as string[])[1]);
    const url = new URL(scope.url);
    url.pathname = `/${databases}`;
    const client = new Kvm2Client({ redisUrl: url.href, prefix: scope.prefix });
    try {
      for (let i = 0; i < 2; i++) {
        const err = await client.create(request('web-db')).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(Kvm2Error);
        expect(err).toMatchObject({ code: 'ERR_CONFIG', kind: 'permanent' });
        expect((err as Error).message).toMatch(/refused the configured database \(ERR DB index/);
      }
      expect(await scope.redis.keys(`${scope.prefix}*`)).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
