// waitFor's options against the real Redis: a timeout longer than a timer can hold (about 24.8
// days) waits that long instead of firing at once, none means no timeout, and options that
// make no sense are refused at once, naming the field, instead of waiting for ever or not at all.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kvm2Client } from '../../queues/client.js';
import { Kvm2Error } from '../../src/errors/error.js';
import { appendResult } from '../../queues/results.js';
import { result } from '../harness/queue-requests.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
let client: Kvm2Client;

beforeAll(async () => {
  scope = await redisScope('wait-for-options');
  client = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
});

afterAll(async () => {
  await client.close();
  await scope.cleanup();
});

const THIRTY_DAYS_MS = 30 * 24 * 3_600_000;

describe('waitFor timeouts', () => {
  it.each([
    ['30 days', THIRTY_DAYS_MS],
    ['2^31 ms', 2 ** 31],
    ['Infinity (no timeout)', Infinity],
  ])('%s: still waiting after a moment, then resolves with the result', async (_, timeoutMs) => {
    const jobId = randomUUID();
    let settled: unknown = 'pending';
    const waiting = client.waitFor(jobId, { timeoutMs }).then(
      (r) => (settled = r),
      (e: unknown) => (settled = e),
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(settled).toBe('pending');
    await appendResult(scope.redis, scope.prefix, result(jobId, 'succeeded'));
    await waiting;
    expect(settled).toMatchObject({ jobId, outcome: 'succeeded' });
  });
});

describe('waitFor refuses options that make no sense', () => {
  const refused = async (call: () => Promise<unknown>, field: string): Promise<void> => {
    const started = Date.now();
    const err = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeLessThan(500);
    expect(err).toBeInstanceOf(Kvm2Error);
    expect((err as Kvm2Error).code).toBe('ERR_INVALID_JOB');
    expect((err as Kvm2Error).kind).toBe('permanent');
    expect((err as Kvm2Error).message).toContain(field);
  };

  it.each([
    ['undefined', undefined],
    ['empty', ''],
    ['a number', 42],
  ])('jobId %s', async (_, jobId) => {
    await refused(() => client.waitFor(jobId as string, { timeoutMs: 2_000 }), 'waitFor.jobId');
  });

  it.each([
    ['negative', -5],
    ['NaN', NaN],
    ['-Infinity', -Infinity],
    ['a string', '100'],
  ])('timeoutMs %s', async (_, timeoutMs) => {
    await refused(
      () => client.waitFor(randomUUID(), { timeoutMs: timeoutMs as number }),
      'waitFor.timeoutMs',
    );
  });
});
