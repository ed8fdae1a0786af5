// queues/redis.ts coalesceWrites against the real Redis: the commands a turn of the event loop
// issues on a producer connection leave in one socket write, their replies come back in order,
// and a connection that ioredis re-dials after losing its socket coalesces on the new one too.
// A worker connection's commands leave as they are issued.
import type { Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import {
  connectProducer,
  createProducerConnection,
  createWorkerConnection,
} from '../../queues/redis.js';
import { REDIS_URL, redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
const opened: Redis[] = [];
beforeAll(async () => {
  scope = await redisScope('coalesce');
});
afterEach(() => {
  for (const r of opened.splice(0)) r.disconnect();
});
afterAll(async () => scope?.cleanup());

function open(redis: Redis): Redis {
  opened.push(redis);
  return redis;
}

/** Counts the writes that reach the socket's handle (one per write or writev syscall batch). */
function countWrites(redis: Redis): { n: number } {
  const socket = redis.stream as Socket & {
    _write: (...a: unknown[]) => unknown;
    _writev: (...a: unknown[]) => unknown;
  };
  const count = { n: 0 };
  const write = socket._write.bind(socket);
  const writev = socket._writev.bind(socket);
  socket._write = (...a: unknown[]) => {
    count.n++;
    return write(...a);
  };
  socket._writev = (...a: unknown[]) => {
    count.n++;
    return writev(...a);
  };
  return count;
}

/** 50 INCRs issued in one turn; their replies, in order. */
async function burst(redis: Redis, key: string): Promise<number[]> {
  return Promise.all(Array.from({ length: 50 }, () => redis.incr(key)));
}

const oneToFifty = Array.from({ length: 50 }, (_, i) => i + 1);

it('sends the commands of one turn in one write, where a plain connection makes one each', async () => {
  const plain = open(new Redis(REDIS_URL));
  await plain.ping();
  const plainWrites = countWrites(plain);
  expect(await burst(plain, `${scope.prefix}:plain`)).toEqual(oneToFifty);
  // Each write completes at once on an idle loopback socket; under pressure Node may batch some.
  expect(plainWrites.n).toBeGreaterThan(10);

  const coalesced = open(createProducerConnection(REDIS_URL) as Redis);
  await connectProducer(coalesced, REDIS_URL);
  const writes = countWrites(coalesced);
  expect(await burst(coalesced, `${scope.prefix}:coalesced`)).toEqual(oneToFifty);
  expect(writes.n).toBe(1);

  // A command issued on its own is not held back: it leaves at the end of its turn.
  const started = performance.now();
  expect(await coalesced.incr(`${scope.prefix}:coalesced`)).toBe(51);
  expect(performance.now() - started).toBeLessThan(200);
  expect(writes.n).toBe(2);
});

it('coalesces on the socket ioredis re-dials after the connection is killed', async () => {
  const redis = open(createProducerConnection(REDIS_URL) as Redis);
  await connectProducer(redis, REDIS_URL);
  await redis.client('SETNAME', 'kvm2-coalesce-test');
  const first = redis.stream;
  const id = await redis.client('ID');
  const ready = new Promise<void>((resolve) => redis.once('ready', () => resolve()));
  await scope.redis.client('KILL', 'ID', String(id));
  await ready;
  expect(redis.stream).not.toBe(first);

  const writes = countWrites(redis);
  expect(await burst(redis, `${scope.prefix}:redialled`)).toEqual(oneToFifty);
  expect(writes.n).toBe(1);
});

it("writes a worker connection's command as it is issued, not at the end of the turn", async () => {
  const worker = open(createWorkerConnection(REDIS_URL) as Redis);
  await worker.ping();
  const writes = countWrites(worker);
  const reply = worker.incr(`${scope.prefix}:worker`);
  // Before this turn ends: a job's completion (which fetches the next job) must not wait for
  // the rest of the turn's work, with Redis idle meanwhile.
  expect(writes.n).toBe(1);
  expect(await reply).toBe(1);
});
