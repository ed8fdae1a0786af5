// The results stream `<prefix>:results` (SPEC §8): one entry per attempt's outcome, its fields
// (docs/results.md) and how an entry is written and parsed. Reading it (consumer groups,
// waitFor) is result-readers.ts. Messages here come from kvm2's errors, which never carry
// user-data.
import type { ErrorKind } from '../src/errors/kind.js';
import { resultsKey } from './names.js';
import { LuaScript } from './script.js';
import { type JobName, type TraceContext } from './registry.js';
import type { RedisConnection } from './redis.js';

export const RESULT_OUTCOMES = ['succeeded', 'failed', 'retrying', 'superseded'] as const;
export type ResultOutcome = (typeof RESULT_OUTCOMES)[number];
/** The outcomes after which a job writes nothing more. */
export const FINAL_OUTCOMES: ReadonlySet<ResultOutcome> = new Set([
  'succeeded',
  'failed',
  'superseded',
]);

/** Approximate cap (XADD MAXLEN ~): trimming keeps Redis bounded without a scan. */
export const RESULTS_MAX_LEN = 100_000;
const MESSAGE_MAX = 2_000;

export interface JobResult {
  readonly jobId: string;
  readonly op: JobName;
  readonly outcome: ResultOutcome;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
  readonly instanceId?: string | undefined;
  readonly generation?: number | undefined;
  readonly errorKind?: ErrorKind | undefined;
  readonly errorCode?: string | undefined;
  readonly message?: string | undefined;
  /** The instance's state (`running`, `provisioning`, …) when the op reports one. */
  readonly state?: string | undefined;
  readonly address?: string | undefined;
  readonly traceContext?: TraceContext | undefined;
}

/** A result as read back, with its stream entry id. */
export interface ResultEntry extends JobResult {
  readonly streamId: string;
}

function fieldsOf(result: JobResult): string[] {
  const fields: string[] = [];
  const put = (name: string, value: string | number | undefined): void => {
    if (value !== undefined) fields.push(name, String(value));
  };
  put('jobId', result.jobId);
  put('op', result.op);
  put('outcome', result.outcome);
  put('attempt', result.attempt);
  put('timestamp', result.timestamp);
  put('instanceId', result.instanceId);
  put('generation', result.generation);
  put('errorKind', result.errorKind);
  put('errorCode', result.errorCode);
  put('message', result.message?.slice(0, MESSAGE_MAX));
  put('state', result.state);
  put('address', result.address);
  put('traceparent', result.traceContext?.traceparent);
  put('tracestate', result.traceContext?.tracestate);
  return fields;
}

const RELEASE_AND_APPEND = LuaScript.load('append-result-releasing');

/** A lock a run's end releases: deleted only while it still holds `token`. */
export interface HeldLock {
  readonly redisKey: string;
  readonly token: string;
}

/**
 * What a run's end writes beside BullMQ's: the keys (results stream, lock key or, with no lock,
 * the job's hash again) and arguments (lock token, stream length, the attempt when the result
 * is final, the entry's fields) that append-result-releasing.lua and complete-job.lua read.
 */
export interface ResultEnding {
  readonly keys: readonly [results: string, lock: string];
  readonly args: readonly (string | number)[];
}

export function resultEnding(
  prefix: string,
  result: JobResult,
  jobKey: string,
  lock?: HeldLock,
): ResultEnding {
  const final = FINAL_OUTCOMES.has(result.outcome) ? String(result.attempt) : '';
  return {
    keys: [resultsKey(prefix), lock?.redisKey ?? jobKey],
    args: [lock?.token ?? '', RESULTS_MAX_LEN, final, ...fieldsOf(result)],
  };
}

/**
 * A run's result that does not complete its job (a failure, a retry): appended and, in the
 * same round trip, the job's lock released (deleted only while it still holds `lock.token`). A
 * final result is appended once per attempt (includes/append-result-once.lua): a run repeated
 * because a Redis failover lost the end of the first gets the first one's id back. `jobKey` is
 * the job's BullMQ hash. With `jobToken` (the run's BullMQ token) it is appended only while the
 * job is still that run's: one that stalled away to another run, or was finished by one, is
 * left to it, and '' is returned. A run that completes its job writes the same in BullMQ's
 * completion (workers/run/completion.ts).
 */
export async function appendRunResult(
  redis: RedisConnection,
  prefix: string,
  result: JobResult,
  jobKey: string,
  lock?: HeldLock,
  jobToken?: string,
): Promise<string> {
  const { keys, args } = resultEnding(prefix, result, jobKey, lock);
  const [lockToken, maxLen, final, ...fields] = args;
  return String(
    await RELEASE_AND_APPEND.run(
      redis,
      [...keys, jobKey, `${jobKey}:lock`],
      [lockToken ?? '', maxLen ?? RESULTS_MAX_LEN, final ?? '', jobToken ?? '', ...fields],
    ),
  );
}

/**
 * The final result an attempt of a job already wrote, if it did (append-result-once.lua names
 * it in the job's hash): a run of that attempt again (its worker died, or lost Redis,
 * after writing it and before BullMQ heard) ends with it instead of running again.
 */
export async function finalOfAttempt(
  redis: RedisConnection,
  prefix: string,
  jobKey: string,
  attempt: number,
): Promise<ResultEntry | undefined> {
  const named = await redis.hget(jobKey, 'kvm2Final');
  const [written, id] = (named ?? '').split(' ');
  if (written !== String(attempt) || id === undefined) return undefined;
  const [entry] = await redis.xrange(resultsKey(prefix), id, id);
  return entry === undefined ? undefined : parseResult(entry[0], entry[1]);
}

/** Appends one result; returns its stream id. */
export async function appendResult(
  redis: RedisConnection,
  prefix: string,
  result: JobResult,
  options: { readonly maxLen?: number } = {},
): Promise<string> {
  const id = await redis.xadd(
    resultsKey(prefix),
    'MAXLEN',
    '~',
    options.maxLen ?? RESULTS_MAX_LEN,
    '*',
    ...fieldsOf(result),
  );
  if (id === null) throw new Error('XADD returned no id');
  return id;
}

/**
 * A stream entry's flat field list back to a result; undefined when it is not one, or has no
 * fields (null: XREADGROUP's answer for a pending entry trimmed from the stream since).
 */
export function parseResult(
  streamId: string,
  flat: readonly string[] | null,
): ResultEntry | undefined {
  if (flat === null) return undefined;
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) f.set(flat[i] ?? '', flat[i + 1] ?? '');
  const jobId = f.get('jobId');
  const op = f.get('op') as JobName | undefined;
  const outcome = f.get('outcome') as ResultOutcome | undefined;
  if (jobId === undefined || op === undefined || outcome === undefined) return undefined;
  if (!RESULT_OUTCOMES.includes(outcome)) return undefined;
  const traceparent = f.get('traceparent');
  const tracestate = f.get('tracestate');
  const generation = f.get('generation');
  return {
    streamId,
    jobId,
    op,
    outcome,
    attempt: Number(f.get('attempt') ?? '0'),
    timestamp: Number(f.get('timestamp') ?? '0'),
    instanceId: f.get('instanceId'),
    generation: generation === undefined ? undefined : Number(generation),
    errorKind: f.get('errorKind') as ErrorKind | undefined,
    errorCode: f.get('errorCode'),
    message: f.get('message'),
    state: f.get('state'),
    address: f.get('address'),
    traceContext:
      traceparent === undefined
        ? undefined
        : { traceparent, ...(tracestate === undefined ? {} : { tracestate }) },
  };
}
