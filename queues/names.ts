// Where kvm2's jobs and records live in Redis (SPEC §8). One queue per host carries that host's
// create, delete and get jobs; `gc` and `health` carry the rest. Every key, BullMQ's and ours,
// starts with the configured prefix, hash-tagged (`{kvm2}`) so all of them share one Redis
// Cluster slot: BullMQ's scripts and ours touch several keys at once.
import { NAME_PATTERN } from '../src/provider/core/ids.js';

export const GC_QUEUE = 'gc';
export const HEALTH_QUEUE = 'health';
const HOST_QUEUE_PREFIX = 'host.';

/** The default of the config's `redis.prefix`. */
export const DEFAULT_PREFIX = '{kvm2}';

/** `host.<name>`. BullMQ refuses `:` in queue names; a DNS label has none. */
export function hostQueueName(host: string): string {
  if (!NAME_PATTERN.test(host)) {
    throw new TypeError('host must be a DNS label to name its queue');
  }
  return `${HOST_QUEUE_PREFIX}${host}`;
}

/** The host a `host.<name>` queue serves; undefined for any other queue. */
export function hostOfQueue(queue: string): string | undefined {
  // A worker asks this for every job of its few queues: answered once per queue name.
  const known = queueHosts.get(queue);
  if (known !== undefined || queueHosts.has(queue)) return known;
  const host = queue.startsWith(HOST_QUEUE_PREFIX)
    ? queue.slice(HOST_QUEUE_PREFIX.length)
    : undefined;
  const found = host !== undefined && NAME_PATTERN.test(host) ? host : undefined;
  if (queueHosts.size < QUEUE_HOSTS_MAX) queueHosts.set(queue, found);
  return found;
}

/** hostOfQueue's answers; bounded, since a caller could ask about any string. */
const queueHosts = new Map<string, string | undefined>();
const QUEUE_HOSTS_MAX = 1_000;

/** Every kvm2 queue for these hosts: what workers listen on and the dashboard shows. */
export function allQueueNames(hosts: readonly { readonly name: string }[]): string[] {
  return [...hosts.map((h) => hostQueueName(h.name)), GC_QUEUE, HEALTH_QUEUE];
}

/**
 * The BullMQ keys a job's add writes, in the order kvm2's enqueue scripts take them
 * (queues/lua/includes/add-bullmq-job.lua): the queue's id counter, meta, active, wait, marker
 * and events, then the job's hash. BullMQ's layout: `<prefix>:<queue>:<suffix>`.
 */
export function jobAddKeys(prefix: string, queue: string, jobId: string): string[] {
  const base = `${prefix}:${queue}:`;
  return ['id', 'meta', 'active', 'wait', 'marker', 'events', jobId].map((s) => base + s);
}

/** A job's hash, BullMQ's `<prefix>:<queue>:<id>`: there while BullMQ keeps the job. */
export function jobKey(prefix: string, queue: string, jobId: string): string {
  return `${prefix}:${queue}:${jobId}`;
}

// Our own keys beside BullMQ's (`<prefix>:<queue>:…`). No queue is named `gen`, `create`,
// `results` or `health`-with-a-colon, so they cannot collide.

/**
 * The newest generation that has a job in a queue: what "superseded" compares against, and what
 * the next one is allocated above.
 */
export function latestGenerationKey(prefix: string, instanceId: string): string {
  return `${prefix}:gen-latest:${instanceId}`;
}

/** Counts every request (generation allocation) of every instance: the order GC reads. */
export function requestCounterKey(prefix: string): string {
  return `${prefix}:requests`;
}

/**
 * The request counter's value at the instance's last request, written with its generation: GC
 * leaves alone an instance requested since it began looking.
 */
export function lastRequestKey(prefix: string, instanceId: string): string {
  return `${prefix}:gen-req:${instanceId}`;
}

/** A create's reservation: uid → its job id and generation, so a repeat yields the same job. */
export function createKey(prefix: string, uid: string): string {
  return `${prefix}:create:${uid}`;
}

/** The key of a worker lock named `name` (workers/locks/redis-locks.ts). */
export function lockKey(prefix: string, name: string): string {
  return `${prefix}:lock:${name}`;
}

/** The results stream upstream applications consume. */
export function resultsKey(prefix: string): string {
  return `${prefix}:results`;
}

/** Latest health report per host (a hash), read by placement. */
export function healthKey(prefix: string): string {
  return `${prefix}:health`;
}

/** Per host (a hash): each kvm2 instance's last published state, what events are diffed from. */
export function instanceStateKey(prefix: string, host: string): string {
  return `${prefix}:instance-state:${host}`;
}

/** A create waiting for its instance's address: the job id, for the watcher to wake it. */
export function addressWaitKey(prefix: string, instanceId: string): string {
  return `${prefix}:address-wait:${instanceId}`;
}
