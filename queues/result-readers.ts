// Reading the results stream: consumer groups for upstream applications (each result once per
// group, acknowledged when handled), and waitFor, which finds one job's final result without a
// group (docs/results.md).
import { Kvm2Error } from '../src/errors/error.js';
import { parseInstanceEvent, type InstanceEventEntry } from './events.js';
import { resultsKey } from './names.js';
import {
  closeConnection,
  duplicateConnection,
  isRedisOffline,
  type RedisConnection,
} from './redis.js';
import { FINAL_OUTCOMES, RESULTS_MAX_LEN, parseResult, type ResultEntry } from './results.js';

/** Fields are null for a pending entry that was trimmed from the stream (XREADGROUP … 0). */
type StreamEntries = [id: string, fields: string[] | null][];

/** An entry of the results stream: a job's result or an instance event (docs/events.md). */
export type StreamEntry = (ResultEntry & { readonly type: 'result' }) | InstanceEventEntry;

/** A stream entry's fields as a result or an event; undefined for neither. */
export function parseStreamEntry(
  streamId: string,
  flat: readonly string[] | null,
): StreamEntry | undefined {
  if (flat === null) return undefined;
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
 * would stay pending in it forever. So are the pending entries the stream was trimmed of since
 * they were delivered (MAXLEN ~, a consumer down for long): a pending read returns their ids
 * with null fields, nothing is left of them to return, and unacknowledged they would come back
 * on every pending read.
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
    const entry = fields === null ? undefined : parse(id, fields);
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

/**
 * One consumer of a consumer group on the results stream, on a connection of its own (a
 * blocking read holds its connection). `Kvm2Client#resultsReader` makes one; the functions
 * above do the same on a connection the caller owns. While Redis is away a read fails with
 * ERR_REDIS_UNAVAILABLE; read again: nothing delivered and unacknowledged is lost (`pending`).
 */
export class ResultsReader {
  readonly group: string;
  readonly consumer: string;
  readonly #conn: RedisConnection;
  readonly #prefix: string;
  readonly #unavailable: (err: unknown) => unknown;

  constructor(
    conn: RedisConnection,
    prefix: string,
    names: { readonly group: string; readonly consumer: string },
    unavailable: (err: unknown) => unknown = (err) => err,
  ) {
    this.#conn = conn;
    this.#prefix = prefix;
    this.group = names.group;
    this.consumer = names.consumer;
    this.#unavailable = unavailable;
  }

  /** Results delivered to this consumer (instance events acknowledged and skipped). */
  read(options: Omit<ReadResultsOptions, 'group' | 'consumer'> = {}): Promise<ResultEntry[]> {
    return this.#run(() => readResults(this.#conn, this.#prefix, this.#options(options)));
  }

  /** Every entry delivered to this consumer, results and instance events, told apart by `type`. */
  readStream(options: Omit<ReadResultsOptions, 'group' | 'consumer'> = {}): Promise<StreamEntry[]> {
    return this.#run(() => readStream(this.#conn, this.#prefix, this.#options(options)));
  }

  /** XACK: these entries are handled and will not be delivered to the group again. */
  ack(streamIds: readonly string[]): Promise<number> {
    return this.#run(() => ackResults(this.#conn, this.#prefix, this.group, streamIds));
  }

  close(): Promise<void> {
    return closeConnection(this.#conn);
  }

  #options(options: Omit<ReadResultsOptions, 'group' | 'consumer'>): ReadResultsOptions {
    return { ...options, group: this.group, consumer: this.consumer };
  }

  async #run<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      throw this.#unavailable(err);
    }
  }
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
  /**
   * Give up after this long with ERR_WAIT_TIMEOUT (transient): milliseconds, 0 or more, however
   * long. Omitted or Infinity: no timeout.
   */
  readonly timeoutMs?: number | undefined;
  /** How many entries to look back through when `since` is not given. */
  readonly scanBack?: number | undefined;
  /**
   * The BullMQ hash keys the job may be under (one per queue it may be on). When none exists
   * and its result is not in the stream, the job is no longer kept (its age or count came, or
   * it was removed) and no result will come: the wait ends with ERR_RESULT_GONE instead of
   * lasting for ever. Omitted: no such check.
   */
  readonly jobKeys?: readonly string[] | undefined;
}

const SCAN_PAGE = 500;
/** The reader's XREAD BLOCK; its connection bounds it (queues/redis.ts boundWaitingCommands). */
const BLOCK_SLICE_MS = 5_000;
/** setTimeout's longest delay; Node fires a longer one after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls `fire` after `ms`, however long, in steps a timer can hold; returns the cancel. */
export function setLongTimeout(ms: number, fire: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = (left: number): void => {
    timer =
      left > MAX_TIMER_MS
        ? setTimeout(() => arm(left - MAX_TIMER_MS), MAX_TIMER_MS)
        : setTimeout(fire, left);
  };
  arm(ms);
  return () => clearTimeout(timer);
}

/**
 * A wait's job id and timeout, as a caller in plain JavaScript may pass them: ERR_INVALID_JOB
 * naming the field, or undefined. An id that is no string would be waited for for ever; a
 * timeout that is no number of ms, 0 or more, would fire at once (setTimeout takes NaN and
 * negatives as 1 ms).
 */
function invalidWait(jobId: unknown, timeoutMs: unknown): Kvm2Error | undefined {
  if (typeof jobId !== 'string' || jobId === '') {
    return new Kvm2Error('ERR_INVALID_JOB', 'waitFor.jobId: must be a non-empty string');
  }
  if (timeoutMs === undefined) return undefined;
  if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs < 0) {
    return new Kvm2Error(
      'ERR_INVALID_JOB',
      'waitFor.timeoutMs: must be a number of milliseconds, 0 or more (omitted or Infinity: no timeout)',
    );
  }
  return undefined;
}
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

/** Stream ids (`ms-seq`) in order: negative when `a` comes first. */
function compareIds(a: string, b: string): number {
  const [am = '0', as = '0'] = a.split('-');
  const [bm = '0', bs = '0'] = b.split('-');
  const ms = BigInt(am) - BigInt(bm);
  const diff = ms === 0n ? BigInt(as) - BigInt(bs) : ms;
  return diff < 0n ? -1 : diff > 0n ? 1 : 0;
}

/** One waitFor in progress. */
interface Wait {
  readonly jobId: string;
  /** Resolves or rejects the wait once; later calls do nothing. */
  readonly settle: (outcome: { result: ResultEntry } | { error: unknown }) => void;
}

/**
 * Every waitFor of one client on one reader: a connection of its own reads the results stream
 * forward (a blocking XREAD, from the newest entry at the time it started) and hands each final
 * result to the waits for its job, for as long as any wait is in progress. A wait that begins
 * while the reader runs reads, on the client's own connection, what the reader passed before it
 * began: from its `since` (a position taken before its job was enqueued) up to the reader's
 * position, or, without `since`, back through the stream from there. So no result written
 * after `since`, or before the call, is missed, and a thousand waits hold one connection (each
 * wait had its own before: on Sentinel that was four, with its failover detector).
 *
 * Redis away for a moment (a failover, a restart) ends no wait: the reads are tried again, from
 * where they were, until each wait's own timeout. Any other failure of the reader ends every
 * wait in progress with it; the next wait starts a new reader.
 */
export class ResultWatcher {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #key: string;
  readonly #waits = new Map<string, Set<Wait>>();
  #reader: { conn: RedisConnection; dialled: Promise<unknown> } | undefined;
  /** The id of the last entry the reader has handed out; undefined while it is not reading. */
  #cursor: string | undefined;
  #starting: Promise<string> | undefined;
  #closed: Kvm2Error | undefined;

  constructor(redis: RedisConnection, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#key = resultsKey(prefix);
  }

  /** How many waits are in progress. */
  get waiting(): number {
    let n = 0;
    for (const set of this.#waits.values()) n += set.size;
    return n;
  }

  /**
   * The job's first final result (succeeded, failed or superseded). A bad job id or timeout is
   * refused at once (ERR_INVALID_JOB).
   */
  wait(jobId: string, options: WaitForResultOptions = {}): Promise<ResultEntry> {
    const { signal, timeoutMs } = options;
    const invalid = invalidWait(jobId, timeoutMs);
    if (invalid !== undefined) return Promise.reject(invalid);
    signal?.throwIfAborted();
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    return new Promise<ResultEntry>((resolve, reject) => {
      let cancelTimer: (() => void) | undefined;
      const onAbort = (): void => wait.settle({ error: signal?.reason });
      const wait: Wait = {
        jobId,
        settle: (outcome) => {
          const set = this.#waits.get(jobId);
          if (set?.delete(wait) !== true) return;
          if (set.size === 0) this.#waits.delete(jobId);
          cancelTimer?.();
          signal?.removeEventListener('abort', onAbort);
          if ('result' in outcome) resolve(outcome.result);
          else
            reject(
              outcome.error instanceof Error ? outcome.error : new Error(String(outcome.error)),
            );
        },
      };
      let set = this.#waits.get(jobId);
      if (set === undefined) this.#waits.set(jobId, (set = new Set()));
      set.add(wait);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined && timeoutMs !== Infinity) {
        cancelTimer = setLongTimeout(timeoutMs, () => {
          wait.settle({
            error: new Kvm2Error(
              'ERR_WAIT_TIMEOUT',
              `no final result for job ${jobId} within ${timeoutMs} ms`,
            ),
          });
        });
      }
      const active = (): boolean => this.#waits.get(jobId)?.has(wait) === true;
      this.#catchUp(jobId, options, active)
        .then(async ({ found, from }) => {
          if (found !== undefined) return { result: found };
          const keys = options.jobKeys;
          if (keys === undefined || keys.length === 0 || !active()) return undefined;
          return this.#unlessGone(jobId, keys, from, active);
        })
        .then(
          (outcome) => {
            if (outcome !== undefined) wait.settle(outcome);
          },
          (error: unknown) => wait.settle({ error }),
        );
    });
  }

  /**
   * undefined while the job is kept (the reader hands over its result when it comes). Once it
   * is not, its result was appended before it finished: after `from` (what the reader passed
   * before the wait began was read already), or nowhere the stream still holds.
   */
  async #unlessGone(
    jobId: string,
    keys: readonly string[],
    from: string,
    active: () => boolean,
  ): Promise<{ result: ResultEntry } | { error: Kvm2Error } | undefined> {
    const kept = await this.#again(
      () => Promise.all(keys.map((key) => this.#redis.exists(key))),
      active,
    );
    if (kept.some((n) => n > 0) || !active()) return undefined;
    let after = from;
    for (;;) {
      const start = after;
      const page = await this.#again(
        () => this.#redis.xrange(this.#key, `(${start}`, '+', 'COUNT', SCAN_PAGE),
        active,
      );
      for (const [id, fields] of page) {
        const result = parseResult(id, fields);
        if (result?.jobId === jobId && FINAL_OUTCOMES.has(result.outcome)) return { result };
      }
      const last = page.at(-1);
      if (page.length < SCAN_PAGE || last === undefined) break;
      after = last[0];
    }
    return {
      error: new Kvm2Error(
        'ERR_RESULT_GONE',
        `job ${jobId} is no longer kept and its result is not in the results stream (both are kept for a bounded time, docs/results.md): get the instance to see where it stands`,
      ),
    };
  }

  /** Ends every wait in progress with ERR_CLIENT_CLOSED and closes the reader's connection. */
  close(): void {
    this.#closed ??= new Kvm2Error('ERR_CLIENT_CLOSED', 'client is closed');
    this.#endAll(this.#closed);
    this.#reader?.conn.disconnect();
  }

  /**
   * What the reader passed before this wait began (the reader sees everything after `from`,
   * its position then).
   */
  async #catchUp(
    jobId: string,
    options: WaitForResultOptions,
    active: () => boolean,
  ): Promise<{ readonly found: ResultEntry | undefined; readonly from: string }> {
    const from = this.#cursor ?? (await this.#start());
    const again = <T>(step: () => Promise<T>): Promise<T> => this.#again(step, active);
    if (options.since === undefined) {
      const found = await again(() =>
        findBackwards(this.#redis, this.#key, jobId, from, options.scanBack ?? RESULTS_MAX_LEN),
      );
      return { found, from };
    }
    let after = options.since;
    while (active() && compareIds(after, from) < 0) {
      const start = after;
      const page = await again(() =>
        this.#redis.xrange(this.#key, `(${start}`, from, 'COUNT', SCAN_PAGE),
      );
      for (const [id, fields] of page) {
        const result = parseResult(id, fields);
        if (result?.jobId === jobId && FINAL_OUTCOMES.has(result.outcome)) {
          return { found: result, from };
        }
      }
      const last = page.at(-1);
      if (page.length < SCAN_PAGE || last === undefined) break;
      after = last[0];
    }
    return { found: undefined, from };
  }

  /** Starts the reader from the stream's newest entry; resolves with that entry's id. */
  #start(): Promise<string> {
    this.#starting ??= (async () => {
      try {
        const cursor = await this.#again(
          () => lastResultId(this.#redis, this.#prefix),
          () => this.#waits.size > 0,
        );
        this.#cursor = cursor;
        void this.#read();
        return cursor;
      } finally {
        this.#starting = undefined;
      }
    })();
    return this.#starting;
  }

  async #read(): Promise<void> {
    const { conn, dialled } = this.#connection();
    try {
      await dialled;
      while (this.#waits.size > 0 && this.#closed === undefined) {
        const from = this.#cursor ?? '$';
        const reply = await this.#again(
          () => conn.xread('COUNT', 500, 'BLOCK', BLOCK_SLICE_MS, 'STREAMS', this.#key, from),
          () => this.#waits.size > 0,
        );
        for (const [id, fields] of reply?.[0]?.[1] ?? []) {
          this.#cursor = id;
          const result = parseResult(id, fields);
          if (result === undefined || !FINAL_OUTCOMES.has(result.outcome)) continue;
          for (const wait of [...(this.#waits.get(result.jobId) ?? [])]) wait.settle({ result });
        }
      }
    } catch (error) {
      if (this.#closed === undefined) this.#endAll(error);
    } finally {
      // Idle: the next wait starts from the stream's newest entry again.
      this.#cursor = undefined;
    }
  }

  /** The reader's connection, and its first dial (a failed one: the reads try again). */
  #connection(): { conn: RedisConnection; dialled: Promise<unknown> } {
    if (this.#reader !== undefined) return this.#reader;
    const conn = duplicateConnection(this.#redis, { lazyConnect: true, enableOfflineQueue: false });
    conn.on('error', () => {
      // Reported through the command that fails; ioredis would print unhandled ones.
    });
    this.#reader = { conn, dialled: conn.connect().catch(() => undefined) };
    return this.#reader;
  }

  /** `step`, tried again while Redis is away and `wanted` still holds. */
  async #again<T>(step: () => Promise<T>, wanted: () => boolean): Promise<T> {
    for (;;) {
      try {
        return await step();
      } catch (err) {
        if (!isRedisOffline(err) || !wanted() || this.#closed !== undefined) throw err;
        await new Promise((resolve) => setTimeout(resolve, OUTAGE_RETRY_MS));
      }
    }
  }

  #endAll(error: unknown): void {
    for (const set of [...this.#waits.values()])
      for (const wait of [...set]) wait.settle({ error });
  }
}
