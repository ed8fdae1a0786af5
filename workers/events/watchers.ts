// One watcher per host across every worker process (docs/events.md): each process tries, for
// each host it serves, to take the host's watch lease (`<prefix>:lock:watch:<host>`); the one
// that holds it watches the host's domains (Provider.watch) and publishes each change of a
// kvm2 instance on the results stream, through a script that publishes only while the lease
// holds and only what differs from the last published state. The others try again every tenth
// of the TTL, or just as the lease would lapse when that is sooner, so when the holder dies
// another takes over as its lease lapses (within the TTL of the death), and its first resync
// publishes what changed meanwhile.
//
// A published address also wakes the create waiting for it (its job, delayed until the next
// address poll, is promoted now): the agent's connect is when asking for the address is worth it.
import type { Logger } from 'pino';
import { publishInstanceChange, publishedInstances } from '../../queues/events.js';
import { addressWaitKey, hostQueueName } from '../../queues/names.js';
import { formatInstanceId } from '../../src/provider/core/ids.js';
import type { HostChange } from '../../src/provider/operations/watch-host.js';
import type { WorkerServices } from '../run/services.js';
import { sleep } from '../locks/abort.js';
import type { Lease } from '../locks/redis-locks.js';

/** A standby tries again this long after the lease would lapse (spread among standbys). */
const AFTER_LAPSE_MS = { min: 5, spread: 20 } as const;

export interface EventWatchers {
  /** The hosts this process watches now (holds the lease of). */
  watching(): string[];
  /** Stops watching and gives the leases back, so another process takes over at once. */
  close(): Promise<void>;
}

export function startEventWatchers(env: WorkerServices, hosts: readonly string[]): EventWatchers {
  const stop = new AbortController();
  const watching = new Set<string>();
  const loops = hosts.map((host) =>
    watchWhileLeased(env, host, stop.signal, watching).catch((err: unknown) => {
      env.logger.error({ host, err: (err as Error).message }, 'events: watcher loop ended');
    }),
  );
  return {
    watching: () => [...watching],
    async close() {
      stop.abort(new Error('worker shutting down'));
      await Promise.all(loops);
    },
  };
}

function logFor(env: WorkerServices, host: string): Logger {
  return env.logger.child({ host, component: 'events' });
}

async function watchWhileLeased(
  env: WorkerServices,
  host: string,
  stop: AbortSignal,
  watching: Set<string>,
): Promise<void> {
  const ttlMs = env.config.events.leaseTtl;
  const logger = logFor(env, host);
  while (!stop.aborted) {
    let lease: Lease | null;
    try {
      lease = await env.locks.tryAcquire(`watch:${host}`, { ttlMs, signal: stop });
    } catch (err) {
      if (stop.aborted) return;
      logger.warn({ err: (err as Error).message }, 'events: could not try for the watch lease');
      lease = null;
    }
    if (lease === null) {
      await sleep(await untilLapse(env, host, ttlMs), stop).catch(() => undefined);
      continue;
    }
    watching.add(host);
    env.metrics.watching(host, true);
    logger.info({ leaseTtl: ttlMs }, 'events: watching host');
    const watch = env.provider.watch({
      host,
      publish: (change) => publish(env, lease.fence(), change, logger),
      published: () => publishedInstances(env.redis, env.prefix, host),
      onError: (err, during) => {
        logger.warn({ during, err: (err as Error).message }, 'events: watcher error');
      },
      onResynced: (reconnects, instances) => {
        logger.info({ reconnects, instances }, 'events: resynced');
      },
      recheckMs: env.config.worker.addressPoll,
      recheckForMs: env.config.defaults.addressTimeout,
    });
    watch.start();
    await abortOfEither(lease.signal, stop);
    await watch.close();
    await lease.release();
    watching.delete(host);
    env.metrics.watching(host, false);
    const why = stop.aborted ? 'shutting down' : (lease.signal.reason as Error).message;
    logger.info({ why }, 'events: stopped watching host');
  }
}

/** When to try again: a tenth of the TTL, or just after the lease would lapse if sooner. */
async function untilLapse(env: WorkerServices, host: string, ttlMs: number): Promise<number> {
  const after = AFTER_LAPSE_MS.min + Math.random() * AFTER_LAPSE_MS.spread;
  let pttl: number;
  try {
    pttl = await env.redis.pttl(env.locks.lockKey(`watch:${host}`));
  } catch {
    pttl = -1; // Redis unreachable: try again a tenth of the TTL later
  }
  // -2: gone already (try again at once); -1: no TTL, or unknown. At most a tenth of the TTL
  // either way, so a lease given back (a holder shutting down) is taken soon too.
  if (pttl === -2) return after;
  return (pttl >= 0 ? Math.min(pttl, ttlMs / 10) : ttlMs / 10) + after;
}

async function publish(
  env: WorkerServices,
  fence: { readonly redisKey: string; readonly token: string },
  change: HostChange,
  logger: Logger,
): Promise<void> {
  const outcome = await publishInstanceChange(env.redis, env.prefix, fence, change);
  if (!outcome.published) {
    if (outcome.reason === 'not-leaseholder') {
      logger.warn('events: the watch lease is no longer ours; not published');
    }
    return;
  }
  const seen = change.observation;
  const instance = formatInstanceId(change.host, change.name);
  env.metrics.eventPublished(change.host, seen?.state ?? 'gone');
  logger.debug(
    { instance, state: seen?.state ?? 'gone', event: change.cause.event, id: outcome.streamId },
    'events: published',
  );
  if (seen?.address !== undefined && seen.state === 'running') {
    await wakeAddressWait(env, seen.host, seen.instanceId, logger);
  }
}

/** The create waiting for this instance's address, delayed until its next poll, runs now. */
async function wakeAddressWait(
  env: WorkerServices,
  host: string,
  instanceId: string,
  logger: Logger,
): Promise<void> {
  const jobId = await env.redis.get(addressWaitKey(env.prefix, instanceId));
  if (jobId === null) return;
  const job = await env.queueFor(hostQueueName(host)).getJob(jobId);
  if (job === undefined || !(await job.isDelayed())) return;
  try {
    await job.promote();
    logger.debug({ job: jobId, instance: instanceId }, 'events: address wait woken');
  } catch {
    // It left the delayed set meanwhile (its poll came first): nothing to wake.
  }
}

/** Resolves when either signal fires, and leaves no listener on the other behind. */
function abortOfEither(a: AbortSignal, b: AbortSignal): Promise<void> {
  if (a.aborted || b.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      a.removeEventListener('abort', done);
      b.removeEventListener('abort', done);
      resolve();
    };
    a.addEventListener('abort', done, { once: true });
    b.addEventListener('abort', done, { once: true });
  });
}
