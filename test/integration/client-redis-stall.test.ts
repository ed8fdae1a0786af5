// The producer when Redis stops answering without closing the connection (a hung server, a
// partition with no RST): every call settles within a bound, as an outage, instead of hanging.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Kvm2Client } from '../../queues/client.js';
import { Kvm2Error } from '../../src/errors/error.js';
import { tcpProxy, type TcpProxy } from '../harness/fault-kit.js';
import { request } from '../harness/queue-requests.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;

beforeAll(async () => {
  scope = await redisScope('client-stall');
});

afterAll(async () => {
  await scope.cleanup();
});

const PENDING = Symbol('pending');

/** What `p` settled with within `ms`, or PENDING. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | Error | typeof PENDING> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof PENDING>((resolve) => {
    timer = setTimeout(() => resolve(PENDING), ms);
  });
  try {
    return await Promise.race([p.catch((e: unknown) => e as Error), late]);
  } finally {
    clearTimeout(timer);
  }
}

function expectUnavailable(err: unknown): void {
  expect(err).toBeInstanceOf(Kvm2Error);
  expect((err as Kvm2Error).code).toBe('ERR_REDIS_UNAVAILABLE');
  expect((err as Kvm2Error).kind).toBe('transient');
}

describe('Redis stops answering', () => {
  let proxy: TcpProxy;
  let client: Kvm2Client;

  beforeAll(async () => {
    proxy = await tcpProxy(Number(new URL(scope.url).port || 6379));
  });

  afterEach(async () => {
    await client.close();
  });

  afterAll(async () => {
    await proxy.cut();
  });

  it('create, delete and gc fail with ERR_REDIS_UNAVAILABLE, and close() ends', async () => {
    client = new Kvm2Client({ redisUrl: `redis://127.0.0.1:${proxy.port}`, prefix: scope.prefix });
    const first = await client.create(request('stall-1'));
    const waiting = client.waitFor(first.jobId).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 200)); // its reader is reading
    proxy.stall();

    const started = Date.now();
    const [created, deleted, collected] = await Promise.all([
      within(client.create(request('stall-2')), 12_000),
      within(client.delete(first.id), 12_000),
      within(client.gc({ tag: 'ci', keep: [], graceMs: 0 }), 12_000),
    ]);
    expectUnavailable(created);
    expectUnavailable(deleted);
    expectUnavailable(collected);
    expect(Date.now() - started).toBeLessThan(10_000);
    // The connection that timed out is dropped and dialled again: the next call does not wait
    // another 5 s on the same silent socket, it fails at once as in any outage.
    const next = Date.now();
    expectUnavailable(await within(client.delete(first.id), 12_000));
    expect(Date.now() - next).toBeLessThan(1_000);
    // Redis answering again, the client is back by itself.
    proxy.resume();
    const backBy = Date.now() + 20_000;
    let back: unknown = PENDING;
    while (Date.now() < backBy) {
      back = await within(client.delete(first.id), 12_000);
      if (!(back instanceof Error)) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(back).toMatchObject({ generation: expect.any(Number) as number });
    proxy.stall();

    // The wait rides the outage out (no timeout given) until close() ends it.
    const closing = Date.now();
    expect(await within(client.close(), 5_000)).toBeUndefined();
    expect(Date.now() - closing).toBeLessThan(3_000);
    expect(await within(waiting, 1_000)).toMatchObject({ code: 'ERR_CLIENT_CLOSED' });
  }, 60_000);
});

describe('blocking reads on the client connections', () => {
  it("a consumer group's read blocks as long as asked, past the command timeout", async () => {
    const client = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
    const reader = await client.resultsReader({ group: 'slow', consumer: randomUUID() });
    try {
      const started = Date.now();
      await expect(reader.read({ blockMs: 7_000 })).resolves.toEqual([]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(6_900);
    } finally {
      await reader.close();
      await client.close();
    }
  }, 20_000);
});
