// The whole results stream as the tests read it back (XRANGE, no consumer group): results, and
// instance events.
import type { RedisConnection } from '../../queues/redis.js';
import { resultsKey } from '../../queues/names.js';
import { parseInstanceEvent, type InstanceEventEntry } from '../../queues/events.js';
import { parseResult, type ResultEntry } from '../../queues/results.js';

export async function allResults(redis: RedisConnection, prefix: string): Promise<ResultEntry[]> {
  const entries = (await redis.xrange(resultsKey(prefix), '-', '+')) as [string, string[]][];
  return entries.flatMap(([id, fields]) => {
    const parsed = parseResult(id, fields);
    return parsed === undefined ? [] : [parsed];
  });
}

export async function resultsOfJob(
  redis: RedisConnection,
  prefix: string,
  jobId: string,
): Promise<ResultEntry[]> {
  return (await allResults(redis, prefix)).filter((r) => r.jobId === jobId);
}

/** Every instance event on the stream (docs/events.md), oldest first. */
export async function allEvents(
  redis: RedisConnection,
  prefix: string,
): Promise<InstanceEventEntry[]> {
  const entries = (await redis.xrange(resultsKey(prefix), '-', '+')) as [string, string[]][];
  return entries.flatMap(([id, fields]) => parseInstanceEvent(id, fields) ?? []);
}

/** One instance's events, oldest first. */
export async function eventsOf(
  redis: RedisConnection,
  prefix: string,
  instanceId: string,
): Promise<InstanceEventEntry[]> {
  return (await allEvents(redis, prefix)).filter((e) => e.instanceId === instanceId);
}

/**
 * The first of the instance's events after its first `after` that `match` accepts, polling
 * the stream every 50 ms; fails after `withinMs` with the events seen.
 */
export async function nextEvent(
  redis: RedisConnection,
  prefix: string,
  instanceId: string,
  after: number,
  match: (e: InstanceEventEntry) => boolean,
  withinMs: number,
): Promise<InstanceEventEntry> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const seen = await eventsOf(redis, prefix, instanceId);
    const found = seen.slice(after).find(match);
    if (found !== undefined) return found;
    if (performance.now() > deadline) {
      const shown = seen.map((e) => `${e.event}/${e.detail ?? ''}→${e.state}`).join(', ');
      throw new Error(`no matching event for ${instanceId} within ${withinMs} ms; seen: ${shown}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
