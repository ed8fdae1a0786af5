// The whole results stream as the tests read it back (XRANGE, no consumer group).
import type { Redis } from 'ioredis';
import { resultsKey } from '../../queues/names.js';
import { parseResult, type ResultEntry } from '../../queues/results.js';

export async function allResults(redis: Redis, prefix: string): Promise<ResultEntry[]> {
  const entries = (await redis.xrange(resultsKey(prefix), '-', '+')) as [string, string[]][];
  return entries.flatMap(([id, fields]) => {
    const parsed = parseResult(id, fields);
    return parsed === undefined ? [] : [parsed];
  });
}

export async function resultsOfJob(
  redis: Redis,
  prefix: string,
  jobId: string,
): Promise<ResultEntry[]> {
  return (await allResults(redis, prefix)).filter((r) => r.jobId === jobId);
}
