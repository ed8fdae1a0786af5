// Reading the results stream: consumer groups for upstream applications (each result once per
// group, acknowledged when handled), and waitFor, which finds one job's final result without a
// group (docs/results.md).
import { Kvm2Error } from '../src/errors/error.js';
import { parseInstanceEvent, type InstanceEventEntry } from './events.js';
import { resultsKey } from './names.js';
import { duplicateConnection, isRedisOffline, type RedisConnection } from './redis.js';
import { FINAL_OUTCOMES, RESULTS_MAX_LEN, parseResult, type ResultEntry } from './results.js';

type StreamEntries = [id: string, fields: string[]][];

/** An entry of the results stream: a job's result or an instance event (docs/events.md). */
export type StreamEntry = (ResultEntry & { readonly type: 'result' }) | InstanceEventEntry;

/** A stream entry's fields as a result or an event; undefined for neither. */
export function parseStreamEntry(
  streamId: string,
  flat: readonly string[],
): StreamEntry | undefined {
  const result = parseResult(streamId, flat);
  if (result !== undefined) return { ...result, type: 'result' };
  return parseInstanceEvent(streamId, flat);
}

/**
 * Creates the consumer group if it is missing (with the stream, MKSTREAM). `startId` '$'
 * (default) delivers only results appended from now on; '0' the whole retained stream.
 */
export async function ensureResultsGroup(
  redis: RedisConnection,
  prefix: string,
  group: string,
  startId: '$' | '0' | (string & {}) = '$',
): Promise<void> {
  try {
    await redis.xgroup('CREATE', resultsKey(prefix), group, startId, 'MKSTREAM');
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('BUSYGROUP')) return;
    throw err;
  }
}

export interface ReadResultsOptions {
  readonly group: string;
  readonly consumer: string;
  readonly count?: number;
  /** Block up to this long for new results; omitted: return at once. */
  readonly blockMs?: number;
  /**
   * Re-read this consumer's delivered but unacknowledged results (after a crash) instead of
   * new ones. Read them first at start, then new ones.
   */
  readonly pending?: boolean;
}

/**
 * One XREADGROUP: results for this consumer of the group. Each result is delivered to one
 * consumer per group; acknowledge it with ackResults once handled. A blocking read holds
 * its connection: give it one of its own.
 */
export function readResults(
  redis: RedisConnection,
  prefix: string,
  options: ReadResultsOptions,
): Promise<ResultEntry[]> {
  return readParsed(redis, prefix, options, parseResult);
}

/**
 * Like readResults, but every entry: results and instance events (docs/events.md), told apart
 * by `type`. Acknowledge each with ackResults once handled.
 */
export function readStream(
  redis: RedisConnection,
  prefix: string,
  options: ReadResultsOptions,
): Promise<StreamEntry[]> {
  return readParsed(redis, prefix, options, parseStreamEntry);
}

/**
 * One XREADGROUP, each entry parsed as the reader's kind. Entries of another kind (events, for
 * a reader of results) are acknowledged here: delivered to the group and never returned, they
 * would stay pending in it forever.
 */
async function readParsed<T>(
  redis: RedisConnection,
  prefix: string,
  options: ReadResultsOptions,
  parse: (streamId: string, fields: string[]) => T | undefined,
): Promise<T[]> {
  const read: T[] = [];
  const others: string[] = [];
  for (const [id, fields] of await readGroup(redis, prefix, options)) {
    const entry = parse(id, fields);
    if (entry === undefined) others.push(id);
    else read.push(entry);
  }
  await ackResults(redis, prefix, options.group, others);
  return read;
}

async function readGroup(
  redis: RedisConnection,
  prefix: string,
  options: ReadResultsOptions,
): Promise<StreamEntries> {
  const count = options.count ?? 100;
  const id = options.pending === true ? '0' : '>';
  const reply =
    options.blockMs === undefined
      ? await redis.xreadgroup(
          'GROUP',
          options.group,
          options.consumer,
          'COUNT',
          count,
          'STREAMS',
          resultsKey(prefix),
          id,
        )
      : await redis.xreadgroup(
          'GROUP',
          options.group,
          options.consumer,
          'COUNT',
          count,
          'BLOCK',
          options.blockMs,
          'STREAMS',
          resultsKey(prefix),
          id,
        );
  const streams = reply as [string, StreamEntries][] | null;
  return streams === null ? [] : (streams[0]?.[1] ?? []);
}

/** XACK: these results are handled and will not be delivered to this group again. */
export async function ackResults(
  redis: RedisConnection,
  prefix: string,
  group: string,
  streamIds: readonly string[],
): Promise<number> {
  if (streamIds.length === 0) return 0;
  return redis.xack(resultsKey(prefix), group, ...streamIds);
}

/** The id of the newest result, '0-0' when the stream is empty or missing. */
export async function lastResultId(redis: RedisConnection, prefix: string): Promise<string> {
  const newest = await redis.xrevrange(resultsKey(prefix), '+', '-', 'COUNT', 1);
  return newest[0]?.[0] ?? '0-0';
}

export interface WaitForResultOptions {
  /** Read results after this stream id. Omitted: look back through the stream first. */
  readonly since?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Give up after this long with ERR_WAIT_TIMEOUT (transient). */
  readonly timeoutMs?: number | undefined;
  /** How many entries to look back through when `since` is not given. */
  readonly scanBack?: number | undefined;
}

const SCAN_PAGE = 500;
const BLOCK_SLICE_MS = 5_000;
/** While Redis is away during a wait, try again this often. */
const OUTAGE_RETRY_MS = 250;

async function findBackwards(
  conn: RedisConnection,
  key: string,
  jobId: string,
  before: string,
  limit: number,
): Promise<ResultEntry | undefined> {
  let end = before;
  let seen = 0;
  let inclusive = true;
  while (seen < limit) {
    const page = await conn.xrevrange(key, inclusive ? end : `(${end}`, '-', 'COUNT', SCAN_PAGE);
    inclusive = false;
    for (const [id, fields] of page) {
      const result = parseResult(id, fields);
      if (result?.jobId === jobId && FINAL_OUTCOMES.has(result.outcome)) return result;
    }
    seen += page.length;
    const oldest = page.at(-1);
    if (page.length < SCAN_PAGE || oldest === undefined) return undefined;
    end = oldest[0];
  }
  return undefined;
}

/**
 * The first final result (succeeded, failed or superseded) of a job. It reads on a connection
 * of its own (a blocking XREAD), without a consumer group. With `since` (a stream id taken
 * before the job was enqueued) it misses nothing written after that; without, it first looks
 * back through the stream, from a position taken before the look, then reads forward from it.
 */
export async function waitForResult(
  redis: RedisConnection,
  prefix: string,
  jobId: string,
  options: WaitForResultOptions = {},
): Promise<ResultEntry> {
  const { signal, timeoutMs } = options;
  signal?.throwIfAborted();
  const key = resultsKey(prefix);
  const conn = duplicateConnection(redis, { lazyConnect: true, enableOfflineQueue: false });
  conn.on('error', () => {
    // Reported through the command that fails; ioredis would print unhandled ones.
  });
  let stopReason: unknown;
  const stop = (reason: unknown): void => {
    stopReason ??= reason;
    conn.disconnect();
  };
  const onAbort = (): void => stop(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(
          () =>
            stop(
              new Kvm2Error(
                'ERR_WAIT_TIMEOUT',
                `no final result for job ${jobId} within ${timeoutMs} ms`,
              ),
            ),
          timeoutMs,
        );
  // Redis away for a moment (a failover, a restart) does not end the wait: the connection
  // comes back by itself, and each read is tried again, from where it was, until the deadline.
  const again = async <T>(step: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        return await step();
      } catch (err) {
        if (stopReason !== undefined || !isRedisOffline(err)) throw err;
        await new Promise((resolve) => setTimeout(resolve, OUTAGE_RETRY_MS));
        if (stopReason !== undefined) throw err;
      }
    }
  };
  try {
    await conn.connect().catch((err: unknown) => {
      if (!isRedisOffline(err)) throw err;
    });
    let cursor: string;
    if (options.since !== undefined) {
      cursor = options.since;
    } else {
      cursor = await again(() => lastResultId(conn, prefix));
      const from = cursor;
      const found = await again(() =>
        findBackwards(conn, key, jobId, from, options.scanBack ?? RESULTS_MAX_LEN),
      );
      if (found !== undefined) return found;
    }
    for (;;) {
      const left = deadline === undefined ? BLOCK_SLICE_MS : deadline - Date.now();
      const block = Math.max(1, Math.min(left, BLOCK_SLICE_MS));
      const from = cursor;
      const reply = await again(() =>
        conn.xread('COUNT', 500, 'BLOCK', block, 'STREAMS', key, from),
      );
      for (const [id, fields] of reply?.[0]?.[1] ?? []) {
        cursor = id;
        const result = parseResult(id, fields);
        if (result?.jobId === jobId && FINAL_OUTCOMES.has(result.outcome)) return result;
      }
    }
  } catch (err) {
    throw stopReason ?? err;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    conn.disconnect();
  }
}
