// The jobs of a host queue `host.<name>`: create, delete, get (SPEC §8). Each create and
// delete begins in one Redis round trip (workers/run/admission.ts): commit its generation, end as
// `superseded` without touching the host when a newer request exists, else take the instance
// lock without waiting (busy → delayed). Then the provider runs with the job's lease.
import { createGeneration } from '../../queues/generations.js';
import { addressWaitKey } from '../../queues/names.js';
import { Kvm2Error } from '../../src/errors/error.js';
import { createRequestOf, type CreateProgress } from '../../queues/registry.js';
import { formatInstanceId, parseInstanceId } from '../../src/provider/core/ids.js';
import type { Instance } from '../../src/provider/core/instance.js';
import type { Provider } from '../../src/provider/provider.js';
import type { JobRun } from '../run/job-run.js';
import { beginInstanceJob } from '../run/admission.js';
import { JobLocks } from '../locks/job-locks.js';
import { busyDelay, delay, succeeded, superseded, type Step } from '../run/outcome.js';

function addressDeadline(progress: unknown): number | undefined {
  if (typeof progress !== 'object' || progress === null) return undefined;
  const p = progress as Partial<CreateProgress>;
  return p.phase === 'address' && typeof p.deadline === 'number' ? p.deadline : undefined;
}

function checkQueueHost(queueHost: string, host: string | undefined, op: string): string {
  if (host !== queueHost) {
    throw new Kvm2Error(
      'ERR_INVALID_JOB',
      `job.${op}.host: '${host ?? ''}' is not the host of this queue ('${queueHost}')`,
    );
  }
  return host;
}

/**
 * Begins the job (generation and lock, workers/run/admission.ts) and runs `fn` with a provider view
 * that holds the instance's lease; a superseded job or a busy instance ends here. The lease
 * aborts the run's controller when the lock is lost, so `fn`'s signal (the run's) fires when
 * the lease is lost or the job is cancelled.
 */
async function underInstanceLock(
  run: JobRun<'create' | 'delete'>,
  base: { readonly instanceId: string; readonly generation: number },
  uid: string | undefined,
  fn: (provider: Provider, signal: AbortSignal) => Promise<Step>,
): Promise<Step> {
  const { services: env, signal } = run;
  signal.throwIfAborted();
  const begun = await beginInstanceJob(
    env.redis,
    env.locks,
    { prefix: env.prefix, instanceId: base.instanceId, generation: base.generation, uid },
    run.controller,
    run.job.id,
  );
  if (begun.state === 'superseded') return superseded(base, begun.latest);
  if (begun.state === 'busy') return busyDelay(Date.now() - run.job.timestamp);
  const lease = begun.lease;
  let step: Step;
  try {
    step = await fn(env.provider.withLocks(new JobLocks(env.locks, [lease])), signal);
  } catch (err) {
    void lease.release();
    // The work failed because the lock was lost or the job cancelled (the signal cut a
    // download, a call short): say that, not what the cut step happened to report.
    if (signal.aborted) throw signal.reason;
    throw err;
  }
  if (step.type === 'result') return { ...step, lease };
  // Not awaited: the release goes out on this connection before anything the runner sends.
  void lease.release();
  return step;
}

export async function processCreate(run: JobRun<'create'>, queueHost: string): Promise<Step> {
  const { services: env, job, data } = run;
  const host = checkQueueHost(queueHost, data.host, 'create');
  const id = formatInstanceId(host, data.name);
  const base = { instanceId: id, generation: data.generation };
  const deadline = addressDeadline(job.progress);
  return await underInstanceLock(run, base, data.uid, async (provider, locked) => {
    if (deadline !== undefined) return checkAddress(run, provider, id, deadline, locked);

    const request = createRequestOf(data);
    const progress = (value: CreateProgress): void => {
      job.updateProgress(value).catch(() => undefined);
    };
    let lastBytesAt = 0;
    const options = {
      signal: locked,
      onProgress: (phase: CreateProgress['phase']) => progress({ phase }),
      // At most twice a second: each update is a Redis write and a job event.
      onBytes: (bytes: number, totalBytes: number | undefined) => {
        const now = Date.now();
        if (now - lastBytesAt < 500 && bytes !== totalBytes) return;
        lastBytesAt = now;
        progress({ phase: 'download', bytes, ...(totalBytes === undefined ? {} : { totalBytes }) });
      },
    };
    let instance: Instance;
    try {
      instance = await provider.create(request, options);
    } catch (err) {
      if (!(await replacedOlderCreate(run, provider, id, err, locked))) throw err;
      instance = await provider.create(request, options);
    }
    if (instance.address !== undefined || data.wait === false) {
      return reportInstance(base, instance);
    }
    // The domain runs: wait for its address by delayed re-queues, holding no slot meanwhile.
    // The host's watcher wakes the job when it sees the address (docs/events.md).
    const timeout = env.config.defaults.addressTimeout;
    const until = Date.now() + timeout;
    await env.redis.set(
      addressWaitKey(env.prefix, id),
      job.id ?? '',
      'PX',
      timeout + 2 * env.config.worker.addressPoll,
    );
    await job.updateProgress({ phase: 'address', deadline: until } satisfies CreateProgress);
    return delay(env.config.worker.addressPoll, 'address');
  });
}

/**
 * The last request wins (SPEC §8), also against an instance an older create request made:
 * when the provider refuses this create because the instance belongs to another uid, and that
 * uid's reservation shows an older create of this same instance, the older instance is deleted
 * (its delete request, if any, was superseded by this create) and true is returned. An
 * instance without such a record (made outside the queue, or a reservation older than 7 days)
 * or made by a newer request is never touched: false, and the refusal stands.
 */
async function replacedOlderCreate(
  run: JobRun<'create'>,
  provider: Provider,
  id: string,
  err: unknown,
  signal: AbortSignal,
): Promise<boolean> {
  const { services: env, data } = run;
  if ((err as { code?: unknown } | null)?.code !== 'ERR_UID_CONFLICT') return false;
  const existing = await provider.get(id, { signal });
  if (existing.uid === data.uid) return false;
  const older = await createGeneration(env.redis, env.prefix, existing.uid, id);
  if (older === undefined || older >= data.generation) return false;
  run.logger.info(
    { uid: data.uid, replaces: existing.uid, generation: data.generation, older },
    'create replaces the instance of an older create request',
  );
  await provider.delete(id, { signal });
  return true;
}

async function checkAddress(
  run: JobRun<'create'>,
  provider: Provider,
  id: string,
  deadline: number,
  signal: AbortSignal,
): Promise<Step> {
  const { services: env, data } = run;
  const base = { instanceId: id, generation: data.generation };
  let instance = await provider.get(id, { signal });
  if (instance.uid !== data.uid) {
    throw new Kvm2Error(
      'ERR_INVALID_JOB',
      `instance ${id} was replaced by another create (uid ${instance.uid}) while this one waited for its address`,
    );
  }
  if (instance.address !== undefined) return reportInstance(base, instance);
  if (instance.state === 'stopped' || instance.state === 'crashed') {
    // Off while its create waited (its host restarted, the guest crashed, someone destroyed
    // it): the create is not done until the instance runs. Carry on from where it stands, as a
    // retry would: adopt it and start it again (same disks, same seed, so the same
    // instance-id: cloud-init does not redo its first boot), and keep waiting until the same
    // deadline (docs/workers.md, "The address wait").
    run.logger.warn(
      { instance: id, state: instance.state },
      'the instance went off while its create waited for the address; starting it again',
    );
    instance = await provider.create(createRequestOf(data), { signal });
    if (instance.address !== undefined) return reportInstance(base, instance);
  }
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
    state: instance.state,
    ...(instance.address === undefined ? {} : { address: instance.address }),
  });
}

export async function processDelete(run: JobRun<'delete'>, queueHost: string): Promise<Step> {
  const { data } = run;
  checkQueueHost(queueHost, parseInstanceId(data.id).host, 'delete');
  const id = data.id;
  const base = { instanceId: id, generation: data.generation };
  return await underInstanceLock(run, base, undefined, async (provider, locked) => {
    await provider.delete(id, { signal: locked });
    return succeeded({ ...base, state: 'deleted' });
  });
}

export async function processGet(run: JobRun<'get'>, queueHost: string): Promise<Step> {
  const { services: env, data, signal } = run;
  checkQueueHost(queueHost, parseInstanceId(data.id).host, 'get');
  const instance = await env.provider.get(data.id, { signal });
  return reportInstance({ instanceId: data.id }, instance);
}
