// What `kvm2 results` and `kvm2 events` share: reading one kind of entry of the results stream
// `<prefix>:results` (results and instance events share it, docs/events.md) without a consumer
// group, so reading changes nothing for upstream consumers: the newest N entries of the kind, or
// N after a stream id, then with --follow every new one (XREAD BLOCK) until Ctrl-C.
import { resultsKey } from '../../queues/names.js';
import {
  asRedisError,
  closeConnection,
  connectProducer,
  createProducerConnection,
  type RedisConnection,
  redisTarget,
} from '../../queues/redis.js';
import type { ParsedArgs } from '../options/args.js';
import { loadCliConfig } from '../options/config.js';
import { DEFAULT_RESULTS_COUNT } from '../options/defaults.js';
import { EXIT } from '../terminal/errors.js';
import { fixedRow } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';
import { onStopSignal } from '../terminal/signals.js';

const FOLLOW_BLOCK_MS = 5_000;
const PAGE = 500;
const STREAM_ID = /^\d+(-\d+)?$/;

type Entries = [id: string, fields: string[]][];

export interface StreamView<T> {
  /** The entry as this view's kind, or undefined when it is another kind (or not for it). */
  readonly parse: (streamId: string, fields: string[]) => T | undefined;
  readonly header: readonly string[];
  /** Fixed widths, so lines printed one at a time (--follow) line up with the header. */
  readonly widths: readonly number[];
  readonly row: (entry: T) => readonly (string | number | undefined)[];
}

function parseAll<T>(view: StreamView<T>, page: Entries): T[] {
  return page.flatMap(([id, fields]) => view.parse(id, fields) ?? []);
}

/** The newest `count` entries of the kind (paging back), or `count` after `from`. */
async function backlog<T>(
  redis: RedisConnection,
  key: string,
  view: StreamView<T>,
  from: string | undefined,
  count: number,
): Promise<{ entries: T[]; cursor: string }> {
  if (from !== undefined) {
    const entries: T[] = [];
    let cursor = from;
    for (;;) {
      const page = (await redis.xrange(key, `(${cursor}`, '+', 'COUNT', PAGE)) as Entries;
      for (const [id, fields] of page) {
        const entry = view.parse(id, fields);
        cursor = id;
        if (entry === undefined) continue;
        entries.push(entry);
        if (entries.length === count) return { entries, cursor };
      }
      if (page.length < PAGE) return { entries, cursor };
    }
  }
  // Followed from the newest entry now; the backlog pages back from that same entry, so one
  // appended in between is printed once, by the follow.
  const newest = (await redis.xrevrange(key, '+', '-', 'COUNT', 1)) as Entries;
  const cursor = newest[0]?.[0];
  if (cursor === undefined) return { entries: [], cursor: '0-0' };
  const entries: T[] = [];
  let end = cursor;
  while (entries.length < count) {
    const page = (await redis.xrevrange(key, end, '-', 'COUNT', PAGE)) as Entries;
    const older = parseAll(view, page).reverse();
    entries.unshift(...older.slice(Math.max(0, older.length - (count - entries.length))));
    const last = page.at(-1);
    if (page.length < PAGE || last === undefined) break;
    end = `(${last[0]}`;
  }
  return { entries, cursor };
}

export async function runStreamView<T>(
  args: ParsedArgs,
  io: CliIo,
  view: StreamView<T>,
): Promise<number> {
  const from = args.string('from');
  if (from !== undefined && !STREAM_ID.test(from)) {
    throw args.usageError(
      `option --from must be a stream id like 1700000000000-0 or 0, got '${from}'`,
    );
  }
  const count = args.positiveInt('count') ?? DEFAULT_RESULTS_COUNT;
  const json = args.flag('json');
  const config = await loadCliConfig(args, io);
  const key = resultsKey(config.redis.prefix);
  const print = (entries: readonly T[]): void => {
    for (const entry of entries) {
      if (json) printJson(io, entry);
      else io.out(fixedRow(view.row(entry), view.widths));
    }
  };

  const target = redisTarget(config.redis);
  const redis = createProducerConnection(target);
  redis.on('error', () => {
    // Reported through the command that fails.
  });
  let stopped = false;
  const removeHandler = onStopSignal(() => {
    stopped = true;
    redis.disconnect();
  });
  try {
    await connectProducer(redis, target);
    const first = await backlog(redis, key, view, from, count);
    if (!json) io.out(fixedRow(view.header, view.widths));
    print(first.entries);
    if (!args.flag('follow')) return EXIT.ok;
    let cursor = first.cursor;
    while (!stopped) {
      const reply = await redis
        .xread('COUNT', 100, 'BLOCK', FOLLOW_BLOCK_MS, 'STREAMS', key, cursor)
        .catch((err: unknown): null => {
          if (stopped) return null;
          throw err;
        });
      const page = reply?.[0]?.[1] ?? [];
      cursor = page.at(-1)?.[0] ?? cursor;
      print(parseAll(view, page));
    }
    return EXIT.ok;
  } catch (err) {
    // An outage mid-read (ioredis's "max retries per request") reads as for any other command.
    throw asRedisError(target, err);
  } finally {
    removeHandler();
    await closeConnection(redis);
  }
}
