// Enqueueing, shared by the client library and GC (which deletes through the per-host queues
// like any upstream app): one Lua script per job kind allocates and commits a create's or a
// delete's generation and adds its BullMQ job, atomically (queues/lua/enqueue-*.lua): one
// round trip and no step to be stopped between. generations.ts says what the generations are.
import { randomUUID } from 'node:crypto';
import { instanceLockName, parseInstanceId } from '../src/provider/core/ids.js';
import { DEFAULT_JOB_OPTIONS } from './job-options.js';
import { CREATE_RESERVATION_TTL_S, GENERATION_TTL_S } from './generations.js';
import {
  createKey,
  GC_QUEUE,
  hostQueueName,
  jobAddKeys,
  lastRequestKey,
  latestGenerationKey,
  lockKey,
  requestCounterKey,
  resultsKey,
} from './names.js';
import { validateJob, type JobData, type JobName, type TraceContext } from './registry.js';
import type { RedisConnection } from './redis.js';
import { LuaScript } from './script.js';

const ENQUEUE_CREATE = LuaScript.load('enqueue-create');
const ENQUEUE_DELETE = LuaScript.load('enqueue-delete');
const ENQUEUE_GC = LuaScript.load('enqueue-gc');

/** Each job kind's BullMQ options as the job's hash stores them (BullMQ's `opts` field). */
const OPTS_HEAD = new Map(
  (Object.keys(DEFAULT_JOB_OPTIONS) as JobName[]).map((name) => [
    name,
    JSON.stringify(DEFAULT_JOB_OPTIONS[name]).slice(0, -1),
  ]),
);

function optsJson(name: JobName, jobId: string): string {
  return `${OPTS_HEAD.get(name) ?? '{'},"jobId":${JSON.stringify(jobId)}}`;
}

/**
 * The job's data as JSON, without `field`, up to where the script writes its value: the
 * generation (or GC's request count) is known only inside the script.
 */
function dataHead(data: object, field: string): string {
  const rest = Object.fromEntries(Object.entries(data).filter(([k]) => k !== field));
  const json = JSON.stringify(rest);
  return `${json.slice(0, -1)}${json === '{}' ? '' : ','}${JSON.stringify(field)}:`;
}

/**
 * What enqueue-create.lua and enqueue-delete.lua share: the keys of the job's add and the
 * instance's generations, and the first arguments (the job, its data and options, the time,
 * the generation TTL).
 */
function generationJob(
  prefix: string,
  name: 'create' | 'delete',
  instanceId: string,
  data: JobData<'create'> | JobData<'delete'>,
): { readonly jobId: string; readonly keys: string[]; readonly args: (string | number)[] } {
  const queue = hostQueueName(parseInstanceId(instanceId).host);
  const jobId = randomUUID();
  return {
    jobId,
    keys: [
      ...jobAddKeys(prefix, queue, jobId),
      resultsKey(prefix),
      latestGenerationKey(prefix, instanceId),
      lastRequestKey(prefix, instanceId),
      requestCounterKey(prefix),
    ],
    args: [
      jobId,
      dataHead(data, 'generation'),
      optsJson(name, jobId),
      Date.now(),
      GENERATION_TTL_S,
    ],
  };
}

/**
 * The job's begin (its keys and generation, kept in its hash as `kvm2Begin`) as JSON up to
 * the generation's value, which the enqueue script writes: what a completion that fetches the
 * job begins it with (complete-job.lua). The worker checks it against the job's data before
 * it trusts the begin (workers/run/admission.ts).
 */
export function beginHead(prefix: string, instanceId: string, uid?: string): string {
  // Built as text: this runs for every job a worker begins (workers/run/admission.ts).
  const latest = JSON.stringify(latestGenerationKey(prefix, instanceId));
  const lock = JSON.stringify(lockKey(prefix, instanceLockName(instanceId)));
  const reservation = JSON.stringify(uid === undefined ? '' : createKey(prefix, uid));
  return `{"latest":${latest},"lock":${lock},"reservation":${reservation},"generation":`;
}

function toArray(reply: unknown): string[] {
  if (!Array.isArray(reply)) throw new TypeError('unexpected reply from a kvm2 enqueue script');
  return reply.map(String);
}

export interface EnqueuedDelete {
  readonly jobId: string;
  readonly generation: number;
  /** The results stream's last id before the enqueue: where a wait for this job reads from. */
  readonly resultsFrom: string;
}

/**
 * A delete's data, validated (a permanent Kvm2Error naming the field otherwise), before
 * anything reaches Redis. Its generation is a placeholder: the enqueue script writes the real one.
 */
export function deleteData(id: string, traceContext?: TraceContext): JobData<'delete'> {
  return validateJob('delete', {
    id,
    generation: 1,
    ...(traceContext === undefined ? {} : { traceContext }),
  });
}

/**
 * Enqueues a delete (deleteData's) on its host's queue. With `unrequestedSince` (a
 * requestCount), GC's delete of an instance it listed with `uid`: only while no request for the
 * instance was made after that count was read ('requested' when one was), and while its last
 * request is not a create of another uid ('replaced': a create replacing it that has not run,
 * which the delete would supersede): undefined, and nothing enqueued, otherwise
 * (generations.ts).
 */
export async function enqueueDelete(
  redis: RedisConnection,
  prefix: string,
  data: JobData<'delete'>,
  options: { readonly unrequestedSince?: number; readonly uid?: string } = {},
): Promise<EnqueuedDelete | undefined> {
  const { jobId, keys, args } = generationJob(prefix, 'delete', data.id, data);
  const unrequestedSince = options.unrequestedSince;
  const [generation = '', resultsFrom = '0-0', turnedAway] = toArray(
    await ENQUEUE_DELETE.run(redis, keys, [
      ...args,
      unrequestedSince === undefined ? '' : String(unrequestedSince),
      beginHead(prefix, data.id),
      options.uid ?? '',
    ]),
  );
  if (turnedAway !== undefined) return undefined;
  return { jobId, generation: Number(generation), resultsFrom };
}

export interface EnqueuedCreateJob {
  readonly jobId: string;
  readonly generation: number;
  /** False when this uid was reserved before: a repeat of the same create, nothing added. */
  readonly fresh: boolean;
  /** The digest the uid was first reserved with: a different one means a reused uid. */
  readonly digest: string;
  /** The results stream's last id before the uid was first reserved: where a waitFor starts. */
  readonly resultsFrom: string;
  /** The instance the uid was first reserved for (a zone request may place a repeat elsewhere). */
  readonly instanceId: string;
}

/**
 * Enqueues a create (validated data, its host placed) on its host's queue, unless its uid is
 * reserved already: then the first create's job comes back and nothing is written.
 */
export async function enqueueCreate(
  redis: RedisConnection,
  prefix: string,
  data: JobData<'create'>,
  args: { readonly instanceId: string; readonly digest: string },
): Promise<EnqueuedCreateJob> {
  const job = generationJob(prefix, 'create', args.instanceId, data);
  const reply = toArray(
    await ENQUEUE_CREATE.run(
      redis,
      [...job.keys, createKey(prefix, data.uid)],
      [
        ...job.args,
        args.digest,
        CREATE_RESERVATION_TTL_S,
        args.instanceId,
        beginHead(prefix, args.instanceId, data.uid),
        data.uid,
      ],
    ),
  );
  const [id = '', generation = '', digest = '', fresh = '0', from = '0-0'] = reply;
  const [, , , , , instanceId = args.instanceId] = reply;
  return {
    jobId: id,
    generation: Number(generation),
    digest,
    fresh: fresh === '1',
    resultsFrom: from,
    instanceId,
  };
}

/** Enqueues a GC round (validated data); its job carries the request count of this moment. */
export async function enqueueGc(
  redis: RedisConnection,
  prefix: string,
  data: JobData<'gc'>,
): Promise<{ readonly jobId: string; readonly resultsFrom: string }> {
  const jobId = randomUUID();
  const from = await ENQUEUE_GC.run(
    redis,
    [...jobAddKeys(prefix, GC_QUEUE, jobId), resultsKey(prefix), requestCounterKey(prefix)],
    [jobId, dataHead(data, 'requestsBefore'), optsJson('gc', jobId), Date.now()],
  );
  return { jobId, resultsFrom: String(from) };
}
