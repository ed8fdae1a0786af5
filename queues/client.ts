// The library upstream applications import (SPEC §8): enqueue create, delete and gc jobs, and
// wait for their results. Every payload is validated by the job registry before anything
// reaches Redis; a Redis outage fails fast (no offline queue) with ERR_REDIS_UNAVAILABLE.
import { context, propagation } from '@opentelemetry/api';
import {
  formatInstanceId,
  isValidName,
  newUid,
  parseInstanceId,
} from '../src/provider/core/ids.js';
import type { CreateRequest } from '../src/provider/core/request.js';
import type { Kvm2Config } from '../src/provider/config/schema.js';
import { requestDigest } from './generations.js';
import { readHealth } from './health.js';
import { deleteData, enqueueCreate, enqueueDelete, enqueueGc } from './enqueue.js';
import {
  createKey,
  DEFAULT_PREFIX,
  GC_QUEUE,
  HEALTH_QUEUE,
  hostQueueName,
  jobKey,
} from './names.js';
import { placeInZone, type ZoneConfig } from './placement.js';
import {
  asRedisError,
  closeConnection,
  connectProducer,
  createProducerConnection,
  duplicateConnection,
  type RedisConnection,
  redisEndpoint,
  redisTarget,
  type RedisTarget,
} from './redis.js';
import { Kvm2Error } from '../src/errors/error.js';
import {
  createRequestOf,
  validateJob,
  type JobData,
  type JobInput,
  type TraceContext,
} from './registry.js';
import {
  ensureResultsGroup,
  ResultsReader,
  ResultWatcher,
  type WaitForResultOptions,
} from './result-readers.js';
import type { ResultEntry } from './results.js';

export { DEFAULT_JOB_OPTIONS } from './job-options.js';

/** Remembered stream positions for waitFor; bounded so a long-lived client stays small. */
const MAX_REMEMBERED = 10_000;

export interface Kvm2ClientOptions {
  /** Redis by URL (`redis://…`), or `redis`: a URL, `{ sentinel }` or `{ cluster }` (one of the two options). */
  readonly redisUrl?: string | undefined;
  readonly redis?: RedisTarget | undefined;
  /** The config's `redis.prefix`; `{kvm2}` by default. */
  readonly prefix?: string | undefined;
  /**
   * Picks the host for a request that names a zone instead of a host. Without it such a
   * request is refused (ERR_ZONE_UNRESOLVED): an instance id needs its host when enqueued.
   */
  readonly resolveZone?: ((zone: string) => string | Promise<string>) | undefined;
  /**
   * The hosts and health schedule to place zone requests with, from the health hash
   * (queues/placement.ts). Used when `resolveZone` is not given.
   */
  readonly placement?: ZoneConfig | undefined;
  /**
   * The configured host names (default: placement's). A create or delete for another host is
   * refused (ERR_INVALID_JOB): no worker takes its queue and the dashboard does not show it, so
   * it would wait unseen for ever. Without either, any host name is enqueued.
   */
  readonly hosts?: readonly string[] | undefined;
}

/** A create as an upstream app writes it: the uid is made here when not given. */
export type CreateInput = Omit<CreateRequest, 'uid'> & { readonly uid?: string | undefined };

export interface CreateOptions {
  /** Whether the job waits for the guest's address (default true). */
  readonly wait?: boolean | undefined;
}

export interface Enqueued {
  readonly jobId: string;
  readonly generation: number;
}

export interface EnqueuedCreate extends Enqueued {
  readonly uid: string;
  /** `<host>/<name>` */
  readonly id: string;
}

/** The active span's W3C trace context, when there is one (a no-op without an OTel SDK). */
export function currentTraceContext(): TraceContext | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  const { traceparent, tracestate } = carrier;
  if (traceparent === undefined) return undefined;
  return tracestate === undefined || tracestate === ''
    ? { traceparent }
    : { traceparent, tracestate };
}

export class Kvm2Client {
  readonly prefix: string;
  readonly #target: RedisTarget;
  readonly #redis: RedisConnection;
  /** Per job this client enqueued (or was given back): where its waitFor reads from, its queue. */
  readonly #resultsFrom = new Map<string, { readonly from: string; readonly queue: string }>();
  readonly #resolveZone: Kvm2ClientOptions['resolveZone'];
  readonly #placement: ZoneConfig | undefined;
  readonly #hosts: ReadonlySet<string> | undefined;
  readonly #watcher: ResultWatcher;
  #closed = false;

  constructor(options: Kvm2ClientOptions) {
    this.prefix = options.prefix ?? DEFAULT_PREFIX;
    const target = options.redis ?? options.redisUrl;
    if (target === undefined) throw new TypeError('Kvm2Client: give redisUrl or redis');
    this.#target = target;
    this.#resolveZone = options.resolveZone;
    this.#placement = options.placement;
    const hosts = options.hosts ?? options.placement?.hosts.map((h) => h.name);
    this.#hosts = hosts === undefined ? undefined : new Set(hosts);
    this.#redis = createProducerConnection(target);
    this.#redis.on('error', () => {
      // Surfaced to callers as ERR_REDIS_UNAVAILABLE; ioredis would print unhandled ones.
    });
    this.#watcher = new ResultWatcher(this.#redis, this.prefix);
  }

  /** A client for the configured Redis, placing zone requests by the health hash. */
  static fromConfig(config: Pick<Kvm2Config, 'redis' | 'hosts' | 'health'>): Kvm2Client {
    return new Kvm2Client({
      redis: redisTarget(config.redis),
      prefix: config.redis.prefix,
      placement: config,
    });
  }

  /** Enqueues a create on its host's queue. A repeat with the same uid yields the same job. */
  async create(input: CreateInput, options: CreateOptions = {}): Promise<EnqueuedCreate> {
    this.#checkOpen();
    const uid = input.uid ?? newUid();
    const traceContext = currentTraceContext();
    // Validate before anything reaches Redis; the real generation replaces the placeholder.
    const draft: JobInput<'create'> = {
      ...input,
      uid,
      generation: 1,
      ...(traceContext === undefined ? {} : { traceContext }),
      ...(options.wait === undefined ? {} : { wait: options.wait }),
    };
    let data = validateJob('create', draft);
    // The digest is of the request as asked (zone, not the host placement picks), so a
    // repeat of a zone request is recognised wherever placement would put it now.
    const digest = requestDigest(createRequestOf(data));
    if (data.host === undefined)
      data = (await this.#placedBefore(data)) ?? (await this.#place(data));
    this.#checkHost('job.create.host', data.host ?? '');
    const id = formatInstanceId(data.host ?? '', data.name);

    const redis = await this.#connection();
    try {
      // One script: a fresh uid is reserved and its job added with its generation; a repeat
      // gets the first create's job back (generations.ts).
      const enqueued = await enqueueCreate(redis, this.prefix, data, { instanceId: id, digest });
      if (enqueued.digest !== digest) {
        throw new Kvm2Error(
          'ERR_UID_REUSED',
          `request.uid: already used by another create (job ${enqueued.jobId}); a repeat must carry the same request`,
        );
      }
      await this.#confirmReplicated(redis);
      const queue = hostQueueName(parseInstanceId(enqueued.instanceId).host);
      this.#remember(enqueued.jobId, enqueued.resultsFrom, queue);
      // A repeat of a zone request, first placed on another host, keeps the first placement.
      const { jobId, instanceId, generation } = enqueued;
      return { jobId, uid, id: instanceId, generation };
    } catch (err) {
      throw this.#redisError(err);
    }
  }

  /** Enqueues a delete; it supersedes every create or delete of the instance enqueued before. */
  async delete(id: string): Promise<Enqueued> {
    this.#checkOpen();
    const traceContext = currentTraceContext();
    // Validated (and refused, naming the field) before any connection is made.
    const data = deleteData(id, traceContext);
    this.#checkHost('job.delete.id', parseInstanceId(data.id).host);
    const redis = await this.#connection();
    try {
      const queued = await enqueueDelete(redis, this.prefix, data);
      // Unconditional: always enqueued (only a delete with unrequestedSince can be turned away).
      if (queued === undefined) throw new Error(`delete of ${id} was not enqueued`);
      await this.#confirmReplicated(redis);
      this.#remember(
        queued.jobId,
        queued.resultsFrom,
        hostQueueName(parseInstanceId(data.id).host),
      );
      return { jobId: queued.jobId, generation: queued.generation };
    } catch (err) {
      throw this.#redisError(err);
    }
  }

  /** Enqueues a GC round for a tag: deletes its instances not in `keep` and older than grace. */
  async gc(input: {
    readonly tag: string;
    readonly keep: readonly string[];
    readonly graceMs: number;
  }): Promise<{ readonly jobId: string }> {
    this.#checkOpen();
    const traceContext = currentTraceContext();
    // Copied (the job must not change with the caller's array) once known to be an array.
    const keep: unknown = input?.keep;
    const data = validateJob('gc', {
      tag: input?.tag,
      keep: Array.isArray(keep) ? [...(keep as unknown[])] : keep,
      graceMs: input?.graceMs,
      ...(traceContext === undefined ? {} : { traceContext }),
    });
    // A keep id on a host no configuration names keeps nothing: the instance the caller meant
    // (a typo of its host) would be deleted.
    data.keep.forEach((id, i) => this.#checkHost(`job.gc.keep.${i}`, parseInstanceId(id).host));
    const redis = await this.#connection();
    try {
      // The job carries the request count of this moment: the keep list is as of this call, and
      // a request made from here on wins over the GC.
      const { jobId, resultsFrom } = await enqueueGc(redis, this.prefix, data);
      await this.#confirmReplicated(redis);
      this.#remember(jobId, resultsFrom, GC_QUEUE);
      return { jobId };
    } catch (err) {
      throw this.#redisError(err);
    }
  }

  /**
   * The job's first final result (succeeded, failed or superseded). For a job this client
   * enqueued it reads from a stream position taken before the enqueue; for any other it looks
   * back through the stream first. Either way a result written before the call is not missed.
   * Every wait of this client shares one reading connection (ResultWatcher).
   */
  async waitFor(
    jobId: string,
    options: Omit<WaitForResultOptions, 'since' | 'jobKeys'> = {},
  ): Promise<ResultEntry> {
    this.#checkOpen();
    const known = this.#resultsFrom.get(jobId);
    // Where the job may be kept: its queue when this client enqueued it, else every queue of
    // the hosts it knows (a job no longer kept, its result trimmed, would be waited for for ever).
    const queues =
      known !== undefined
        ? [known.queue]
        : this.#hosts === undefined
          ? []
          : [GC_QUEUE, HEALTH_QUEUE, ...[...this.#hosts].map(hostQueueName)];
    const jobKeys = queues.map((queue) => jobKey(this.prefix, queue, jobId));
    try {
      // Rides out a Redis failover until the timeout.
      const result = await this.#watcher.wait(jobId, {
        ...options,
        since: known?.from,
        jobKeys,
      });
      this.#resultsFrom.delete(jobId);
      return result;
    } catch (err) {
      throw asRedisError(this.#target, err);
    }
  }

  /**
   * A consumer of the consumer group `group` on the results stream, on a connection of its own.
   * Creates the group when it is missing, delivering from `start`: '$' (default) only what is
   * appended from now on, '0' the whole retained stream. Close it when done.
   */
  async resultsReader(options: {
    readonly group: string;
    readonly consumer: string;
    readonly start?: '$' | '0' | (string & {});
  }): Promise<ResultsReader> {
    this.#checkOpen();
    const conn = duplicateConnection(this.#redis, { lazyConnect: true, enableOfflineQueue: false });
    conn.on('error', () => {
      // Surfaced to callers as ERR_REDIS_UNAVAILABLE; ioredis would print unhandled ones.
    });
    try {
      await connectProducer(conn, this.#target);
      await ensureResultsGroup(conn, this.prefix, options.group, options.start);
    } catch (err) {
      await closeConnection(conn);
      throw asRedisError(this.#target, err);
    }
    return new ResultsReader(conn, this.prefix, options, (err) => asRedisError(this.#target, err));
  }

  /** Closes the queues and the connections. Waits in progress end with ERR_CLIENT_CLOSED. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#watcher.close();
    await closeConnection(this.#redis);
  }

  /**
   * A repeat of a zone create goes where the first went, without placing it again: placement
   * could fail now (the zone's hosts unhealthy, the host moved to another zone) while the job
   * it would find exists.
   */
  async #placedBefore(data: JobData<'create'>): Promise<JobData<'create'> | undefined> {
    const redis = await this.#connection();
    const reserved = await redis
      .hget(createKey(this.prefix, data.uid), 'instanceId')
      .catch((err: unknown) => {
        throw this.#redisError(err);
      });
    if (reserved === null) return undefined;
    try {
      return withHost(data, parseInstanceId(reserved).host);
    } catch {
      return undefined; // not an id kvm2 wrote: place it, and the script decides
    }
  }

  async #place(data: JobData<'create'>): Promise<JobData<'create'>> {
    const zone = data.zone ?? '';
    if (this.#resolveZone === undefined && this.#placement !== undefined) {
      const placement = this.#placement;
      const redis = await this.#connection();
      const reports = await readHealth(redis, this.prefix).catch((err: unknown) => {
        throw this.#redisError(err);
      });
      const host = placeInZone({
        zone,
        hosts: placement.hosts,
        reports,
        everyMs: placement.health.every,
        now: Date.now(),
      });
      return withHost(data, host);
    }
    if (this.#resolveZone === undefined) {
      throw new Kvm2Error(
        'ERR_ZONE_UNRESOLVED',
        'request.zone: this client has no zone placement (resolveZone); name a host instead',
      );
    }
    return withHost(data, await this.#resolveZone(zone));
  }

  /** A host this client knows to be configured, or ERR_INVALID_JOB naming `field`. */
  #checkHost(field: string, host: string): void {
    if (this.#hosts === undefined || this.#hosts.has(host)) return;
    throw new Kvm2Error(
      'ERR_INVALID_JOB',
      `${field}: host '${host}' is not in the configuration (hosts: ${[...this.#hosts].join(', ')})`,
    );
  }

  /**
   * A failure of the client's connection as the caller sees it (ERR_REDIS_UNAVAILABLE for an
   * outage). A command Redis did not answer in time leaves the socket open on a Redis that may
   * never answer it: the connection is dropped and dialled again, so the calls after it fail at
   * once while it is away, as in any outage, and go through once it answers again.
   */
  #redisError(err: unknown): unknown {
    if (
      err instanceof Error &&
      err.message === 'Command timed out' &&
      this.#redis.status === 'ready'
    ) {
      this.#redis.disconnect(true);
    }
    return asRedisError(this.#target, err);
  }

  #checkOpen(): void {
    if (this.#closed) throw new Kvm2Error('ERR_CLIENT_CLOSED', 'client is closed');
  }

  async #connection(): Promise<RedisConnection> {
    await connectProducer(this.#redis, this.#target);
    return this.#redis;
  }

  /**
   * On Sentinel, an enqueue is confirmed once `confirmReplicas` replicas have every write this
   * connection made (WAIT): a failover promotes a replica, and what the old master had not
   * sent on is gone. Not confirmed in time → ERR_REDIS_UNAVAILABLE: the request may or may not
   * survive, and sending it again is safe (a create with the same uid is the same job).
   */
  async #confirmReplicated(redis: RedisConnection): Promise<void> {
    if (typeof this.#target === 'string' || !('sentinel' in this.#target)) return;
    const { confirmReplicas, confirmTimeout } = this.#target.sentinel;
    if (confirmReplicas === 0) return;
    const acked = await redis.wait(confirmReplicas, confirmTimeout);
    if (acked < confirmReplicas) {
      throw new Kvm2Error(
        'ERR_REDIS_UNAVAILABLE',
        `redis at ${redisEndpoint(this.#target)} did not confirm the enqueue on ${confirmReplicas} replica(s) within ${confirmTimeout} ms (${acked} did): a failover could lose it; send it again (a create with the same uid is the same job)`,
      );
    }
  }

  #remember(jobId: string, resultsFrom: string, queue: string): void {
    if (this.#resultsFrom.size >= MAX_REMEMBERED) {
      const oldest = this.#resultsFrom.keys().next();
      if (oldest.done !== true) this.#resultsFrom.delete(oldest.value);
    }
    this.#resultsFrom.set(jobId, { from: resultsFrom, queue });
  }
}

/**
 * A zone request placed on `host`: the host named instead of the zone. The rest was validated
 * with the request; only the host, which placement or the application's resolveZone chose,
 * is checked.
 */
function withHost(data: JobData<'create'>, host: string): JobData<'create'> {
  if (!isValidName(host)) {
    throw new Kvm2Error(
      'ERR_INVALID_JOB',
      'job.create.host: the zone placement chose no valid host name from the configuration',
    );
  }
  const { zone: _zone, ...placed } = data;
  return { ...placed, host };
}
