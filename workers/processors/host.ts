// The jobs of a host queue `host.<name>`: create, delete, get (SPEC §8). Each create and
// delete first commits its generation (a job older than the instance's latest request ends as
// `superseded` without touching the host), then takes the instance lock without waiting (busy
// → delayed), checks the generation again under the lock, and calls the provider.
import type { Job } from 'bullmq';
import { commitGeneration, latestGeneration } from '../../queues/generations.js';
import { QueueError, type JobData } from '../../queues/registry.js';
import { formatInstanceId, parseInstanceId } from '../../src/provider/ids.js';
import type { Instance } from '../../src/provider/instance.js';
import type { JobEnv } from '../env.js';
import { linkSignals } from '../locks/abort.js';
import type { Lease } from '../locks.js';
import { busyDelay, delay, succeeded, superseded, type Step } from '../step.js';

/** The create's progress as the job records it: read by `kvm2 create --wait`. */
export interface CreateProgress {
  readonly phase: 'queued' | 'download' | 'volumes' | 'boot' | 'address';
  /** The address wait's deadline (ms since the epoch), once the domain runs. */
  readonly deadline?: number;
}

function addressDeadline(progress: unknown): number | undefined {
  if (typeof progress !== 'object' || progress === null) return undefined;
  const p = progress as Partial<CreateProgress>;
  return p.phase === 'address' && typeof p.deadline === 'number' ? p.deadline : undefined;
}

function checkQueueHost(queueHost: string, host: string | undefined, op: string): string {
  if (host !== queueHost) {
    throw new QueueError(
      'ERR_INVALID_JOB',
      'permanent',
      `job.${op}.host: '${host ?? ''}' is not the host of this queue ('${queueHost}')`,
    );
  }
  return host;
}

/**
 * Runs `fn` holding the instance's lock, or returns a busy delay when another job holds it.
 * The provider is handed the same lease (JobLocks), and `fn`'s signal fires when the lease is
 * lost or the job is cancelled.
 */
async function underInstanceLock(
  env: JobEnv,
  id: string,
  signal: AbortSignal,
  fn: (signal: AbortSignal) => Promise<Step>,
): Promise<Step> {
  const lease: Lease | null = await env.locks.redisLocks.tryAcquire(`instance:${id}`, {
    signal,
  });
  if (lease === null) return busyDelay();
  const linked = linkSignals([signal, lease.signal]);
  try {
    return await env.locks.holding([lease], () => fn(linked.signal));
  } finally {
    linked.dispose();
    await lease.release();
  }
}

export async function processCreate(
  env: JobEnv,
  job: Job,
  data: JobData<'create'>,
  queueHost: string,
  signal: AbortSignal,
): Promise<Step> {
  const host = checkQueueHost(queueHost, data.host, 'create');
  const id = formatInstanceId(host, data.name);
  const base = { instanceId: id, generation: data.generation };
  const committed = await commitGeneration(env.redis, env.prefix, id, data.generation, data.uid);
  if (committed.superseded) return superseded(base, committed.latest);

  const deadline = addressDeadline(job.progress);
  return underInstanceLock(env, id, signal, async (locked) => {
    const latest = await latestGeneration(env.redis, env.prefix, id);
    if (latest > data.generation) return superseded(base, latest);
    if (deadline !== undefined) return checkAddress(env, data, id, deadline, locked);

    const { generation: _g, traceContext: _t, wait, ...request } = data;
    const instance = await env.provider.create(request, {
      signal: locked,
      onProgress: (phase) => {
        job.updateProgress({ phase } satisfies CreateProgress).catch(() => undefined);
      },
    });
    if (instance.address !== undefined || wait === false) return reportInstance(base, instance);
    // The domain runs: wait for its address by delayed re-queues, holding no slot meanwhile.
    const until = Date.now() + env.config.defaults.addressTimeout;
    await job.updateProgress({ phase: 'address', deadline: until } satisfies CreateProgress);
    return delay(env.config.worker.addressPoll, 'address');
  });
}

async function checkAddress(
  env: JobEnv,
  data: JobData<'create'>,
  id: string,
  deadline: number,
  signal: AbortSignal,
): Promise<Step> {
  const base = { instanceId: id, generation: data.generation };
  const instance = await env.provider.get(id, { signal });
  if (instance.uid !== data.uid) {
    throw new QueueError(
      'ERR_INVALID_JOB',
      'permanent',
      `instance ${id} was replaced by another create (uid ${instance.uid}) while this one waited for its address`,
    );
  }
  if (instance.address !== undefined) return reportInstance(base, instance);
  if (Date.now() >= deadline) {
    return succeeded({
      ...base,
      state: instance.state,
      message: `the instance runs but reported no address within ${env.config.defaults.addressTimeout} ms (defaults.addressTimeout)`,
    });
  }
  return delay(env.config.worker.addressPoll, 'address');
}

function reportInstance(
  base: { instanceId: string; generation?: number },
  instance: Instance,
): Step {
  return succeeded({
    ...base,
    state: instance.address === undefined ? instance.state : 'running',
    ...(instance.address === undefined ? {} : { address: instance.address }),
  });
}

export async function processDelete(
  env: JobEnv,
  data: JobData<'delete'>,
  queueHost: string,
  signal: AbortSignal,
): Promise<Step> {
  checkQueueHost(queueHost, parseInstanceId(data.id).host, 'delete');
  const id = data.id;
  const base = { instanceId: id, generation: data.generation };
  const committed = await commitGeneration(env.redis, env.prefix, id, data.generation);
  if (committed.superseded) return superseded(base, committed.latest);
  return underInstanceLock(env, id, signal, async (locked) => {
    const latest = await latestGeneration(env.redis, env.prefix, id);
    if (latest > data.generation) return superseded(base, latest);
    await env.provider.delete(id, { signal: locked });
    return succeeded({ ...base, state: 'deleted' });
  });
}

export async function processGet(
  env: JobEnv,
  data: JobData<'get'>,
  queueHost: string,
  signal: AbortSignal,
): Promise<Step> {
  checkQueueHost(queueHost, parseInstanceId(data.id).host, 'get');
  const instance = await env.provider.get(data.id, { signal });
  return reportInstance({ instanceId: data.id }, instance);
}
