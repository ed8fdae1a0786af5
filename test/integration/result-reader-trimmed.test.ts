// A consumer group's reader after the stream was trimmed past what it had been given and not
// acknowledged (a consumer down for long, MAXLEN ~ at work): XREADGROUP still lists those ids
// as pending, with no fields. The reader acknowledges them and goes on; it does not throw.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kvm2Client } from '../../queues/client.js';
import { readStream } from '../../queues/result-readers.js';
import { appendResult } from '../../queues/results.js';
import { resultsKey } from '../../queues/names.js';
import { result } from '../harness/queue-requests.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
let client: Kvm2Client;

beforeAll(async () => {
  scope = await redisScope('reader-trimmed');
  client = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
});

afterAll(async () => {
  await client.close();
  await scope.cleanup();
});

const pendingCount = async (group: string): Promise<number> =>
  Number((await scope.redis.xpending(resultsKey(scope.prefix), group))[0]);

describe('results trimmed while pending', () => {
  it('acknowledges the trimmed entries, returns the rest and reads on', async () => {
    const reader = await client.resultsReader({ group: 'billing', consumer: 'c1', start: '0' });
    try {
      const jobs = [randomUUID(), randomUUID(), randomUUID()];
      for (const jobId of jobs)
        await appendResult(scope.redis, scope.prefix, result(jobId, 'succeeded'));
      expect((await reader.read()).map((r) => r.jobId)).toEqual(jobs);
      // Not acknowledged; meanwhile the stream is trimmed to its newest entry.
      await scope.redis.xtrim(resultsKey(scope.prefix), 'MAXLEN', 1);
      expect(await pendingCount('billing')).toBe(3);

      const pending = await reader.read({ pending: true });
      expect(pending.map((r) => r.jobId)).toEqual([jobs[2]]);
      // The two trimmed ids are acknowledged: only the surviving entry is pending still.
      expect(await pendingCount('billing')).toBe(1);
      await reader.ack(pending.map((r) => r.streamId));
      expect(await reader.read({ pending: true })).toEqual([]);

      const later = randomUUID();
      await appendResult(scope.redis, scope.prefix, result(later, 'failed'));
      expect((await reader.read()).map((r) => r.jobId)).toEqual([later]);
    } finally {
      await reader.close();
    }
  });

  it('readStream does the same on a connection the caller owns', async () => {
    const options = { group: 'audit', consumer: 'c1' } as const;
    await scope.redis.xgroup('CREATE', resultsKey(scope.prefix), options.group, '$', 'MKSTREAM');
    const jobs = [randomUUID(), randomUUID()];
    for (const jobId of jobs)
      await appendResult(scope.redis, scope.prefix, result(jobId, 'retrying'));
    expect(await readStream(scope.redis, scope.prefix, options)).toHaveLength(2);
    await scope.redis.xtrim(resultsKey(scope.prefix), 'MAXLEN', 0);

    await expect(
      readStream(scope.redis, scope.prefix, { ...options, pending: true }),
    ).resolves.toEqual([]);
    expect(await pendingCount(options.group)).toBe(0);
  });
});
