// kvm2 results: read the results stream `<prefix>:results` (SPEC §8, docs/results.md) without
// a consumer group, so reading it changes nothing for upstream consumers. --follow blocks on
// XREAD until Ctrl-C.
import type { Redis } from 'ioredis';
import { resultsKey } from '../../queues/names.js';
import { connectProducer, createProducerConnection } from '../../queues/redis.js';
import { parseResult, type ResultEntry } from '../../queues/results.js';
import type { ParsedArgs } from '../options/args.js';
import { loadCliConfig } from '../options/config.js';
import { DEFAULT_RESULTS_COUNT } from '../options/defaults.js';
import { EXIT } from '../terminal/errors.js';
import { fixedRow, formatTime } from '../terminal/format.js';
import { printJson, type CliIo } from '../terminal/io.js';
import { onStopSignal } from '../terminal/signals.js';

const FOLLOW_BLOCK_MS = 5_000;
const STREAM_ID = /^\d+(-\d+)?$/;

type Entries = [id: string, fields: string[]][];

const HEADER = ['TIME', 'JOB', 'OP', 'INSTANCE', 'OUTCOME', 'KIND', 'STATE', 'ADDRESS', 'MESSAGE'];
/** Fixed widths, so lines printed one at a time (--follow) line up with the header. */
const WIDTHS = [24, 36, 6, 24, 10, 14, 12, 15] as const;

function row(entry: ResultEntry): (string | undefined)[] {
  return [
    formatTime(entry.timestamp),
    entry.jobId,
    entry.op,
    entry.instanceId,
    entry.outcome,
    entry.errorKind,
    entry.state,
    entry.address,
    entry.message,
  ];
}

function parse(entries: Entries): ResultEntry[] {
  return entries.flatMap(([id, fields]) => parseResult(id, fields) ?? []);
}

async function backlog(
  redis: Redis,
  key: string,
  from: string | undefined,
  count: number,
): Promise<{ entries: ResultEntry[]; cursor: string }> {
  if (from !== undefined) {
    const page = (await redis.xrange(key, `(${from}`, '+', 'COUNT', count)) as Entries;
    return { entries: parse(page), cursor: page.at(-1)?.[0] ?? from };
  }
  const page = ((await redis.xrevrange(key, '+', '-', 'COUNT', count)) as Entries).reverse();
  return { entries: parse(page), cursor: page.at(-1)?.[0] ?? '0-0' };
}

export async function run(args: ParsedArgs, io: CliIo): Promise<number> {
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
  const print = (entries: readonly ResultEntry[]): void => {
    for (const entry of entries) {
      if (json) printJson(io, entry);
      else io.out(fixedRow(row(entry), WIDTHS));
    }
  };

  const redis = createProducerConnection(config.redis.url);
  redis.on('error', () => {
    // Reported through the command that fails.
  });
  let stopped = false;
  const removeHandler = onStopSignal(() => {
    stopped = true;
    redis.disconnect();
  });
  try {
    await connectProducer(redis, config.redis.url);
    const first = await backlog(redis, key, from, count);
    if (!json) io.out(fixedRow(HEADER, WIDTHS));
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
      print(parse(page));
    }
    return EXIT.ok;
  } finally {
    removeHandler();
    if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
    else redis.disconnect();
  }
}
