// ioredis connections for the two sides of the queue (STACK-NOTES). A producer fails fast: no
// offline queue, so a command during an outage rejects at once instead of waiting for Redis
// to come back, and a command Redis does not answer (no reply, no reset) times out. A worker
// waits: BullMQ's blocking commands need maxRetriesPerRequest null and no command timeout.
import type { Socket } from 'node:net';
import { Cluster, Command, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { ClusterConfig, RedisConfig, SentinelConfig } from '../src/provider/config/schema.js';
import { DEFAULT_PREFIX } from './names.js';
import { Kvm2Error } from '../src/errors/error.js';

const PRODUCER_CONNECT_TIMEOUT_MS = 1_500;
/**
 * How long a producer's command may go unanswered before it fails as an outage. A Redis that
 * stops answering without closing the socket (hung, or cut off with no RST) otherwise holds
 * every call for ever: ioredis sees no error until TCP gives up, after many minutes. Far above
 * an enqueue's round trip on a busy Redis.
 */
const PRODUCER_COMMAND_TIMEOUT_MS = 5_000;
/**
 * What a command that waits on purpose (a blocking read's BLOCK, WAIT's timeout) is given on
 * top of its own wait before it times out (boundWaitingCommands).
 */
const WAITING_COMMAND_GRACE_MS = 2_000;
/** setTimeout's longest delay; a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How long closing waits for QUIT's answer before it drops the connection. */
const QUIT_TIMEOUT_MS = 2_000;

/** Reconnect in the background with a capped backoff; callers in between fail fast. */
function reconnectBackoff(times: number): number {
  return Math.min(100 * 2 ** Math.min(times, 5), 3_000);
}

export const producerRedisOptions: Readonly<RedisOptions> = Object.freeze({
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  connectTimeout: PRODUCER_CONNECT_TIMEOUT_MS,
  commandTimeout: PRODUCER_COMMAND_TIMEOUT_MS,
  lazyConnect: true,
  retryStrategy: reconnectBackoff,
});

// No commandTimeout: BullMQ's blocking reads (BZPOPMIN, XREAD BLOCK) would time out under it,
// and BullMQ requires these connections to wait (maxRetriesPerRequest null).
export const workerRedisOptions: Readonly<RedisOptions> = Object.freeze({
  maxRetriesPerRequest: null,
  enableOfflineQueue: true,
  retryStrategy: reconnectBackoff,
});

/** The BullMQ prefix and ours: the config's `redis.prefix`, `{kvm2}` by default. */
export function keyPrefix(config?: { readonly redis?: Pick<RedisConfig, 'prefix'> }): string {
  return config?.redis?.prefix ?? DEFAULT_PREFIX;
}

/**
 * Where Redis is: a redis:// URL, a Sentinel group (the config's `redis.sentinel`) or a
 * Redis Cluster (`redis.cluster`).
 */
export type RedisTarget =
  string | { readonly sentinel: SentinelConfig } | { readonly cluster: ClusterConfig };

/** A connection to either kind of Redis: one server (alone or behind Sentinel), or a Cluster. */
export type RedisConnection = Redis | Cluster;

const DEFAULT_URL = 'redis://127.0.0.1:6379';

/** The configuration's Redis: its Sentinel group or Cluster, else its URL. */
export function redisTarget(redis: Pick<RedisConfig, 'url' | 'sentinel' | 'cluster'>): RedisTarget {
  if (redis.sentinel !== undefined) return { sentinel: redis.sentinel };
  if (redis.cluster !== undefined) return { cluster: redis.cluster };
  return redis.url ?? DEFAULT_URL;
}

const nodeList = (nodes: readonly { host: string; port: number }[]): string =>
  nodes
    .map((n) => (n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`))
    .join(', ');

/**
 * `host:port` of a Redis URL, a Sentinel group's master name and sentinels, or a Cluster's
 * nodes, for messages: never a URL itself or a password.
 */
export function redisEndpoint(target: RedisTarget): string {
  if (typeof target !== 'string') {
    if ('cluster' in target) return `redis cluster (${nodeList(target.cluster.nodes)})`;
    return `sentinel master '${target.sentinel.name}' (${nodeList(target.sentinel.nodes)})`;
  }
  try {
    const u = new URL(target);
    return `${u.hostname}:${u.port === '' ? '6379' : u.port}`;
  } catch {
    return 'the configured Redis';
  }
}

/**
 * After a Sentinel failover the old master, now a replica, answers writes with READONLY; a
 * master run with `min-replicas-to-write` (docs/operations.md) answers NOREPLICAS while it has
 * no replica, as the old one does from the moment its replica is promoted, and the new one
 * until a replica has joined it. Either way the connection is made again (to the master the
 * sentinels name now) and the command sent again, which is safe, since a refused write did
 * nothing (ioredis: 2 = reconnect and resend).
 */
function reconnectOnReadonly(err: Error): 2 | false {
  return /^(READONLY|NOREPLICAS)/.test(err.message) ? 2 : false;
}

function credentials(
  c: Pick<SentinelConfig, 'username' | 'password'>,
): Pick<RedisOptions, 'username' | 'password'> {
  return {
    ...(c.username === undefined ? {} : { username: c.username }),
    ...(c.password === undefined ? {} : { password: c.password }),
  };
}

/**
 * Drops the arguments of the command ioredis hangs on its errors (`err.command`): AUTH's
 * password, a script's job data with its user-data. Such an error reaches logs (pino prints
 * every field), stderr (BullMQ prints a queue's unheard errors) and callers (as a cause), so
 * every error of our connections goes through this first; the command's name stays. Follows
 * `cause` and a Cluster's `lastNodeError`.
 */
export function withoutCommandArgs<T>(err: T, depth = 0): T {
  if (typeof err !== 'object' || err === null || depth > 4) return err;
  const e = err as { command?: unknown; cause?: unknown; lastNodeError?: unknown };
  if (typeof e.command === 'object' && e.command !== null && 'args' in e.command) {
    const name = (e.command as { name?: unknown }).name;
    e.command = typeof name === 'string' ? { name } : {};
  }
  withoutCommandArgs(e.cause, depth + 1);
  withoutCommandArgs(e.lastNodeError, depth + 1);
  return err;
}

/**
 * The SELECT a server refused (a database it does not have), by connection: ioredis only emits
 * it and goes on, on database 0, where another deployment's queues may be.
 */
const refusedDatabase = new WeakMap<RedisConnection, Error>();

function databaseRefusal(redis: RedisConnection, target: RedisTarget): Kvm2Error | undefined {
  const refusal = refusedDatabase.get(redis);
  if (refusal === undefined) return undefined;
  return new Kvm2Error(
    'ERR_CONFIG',
    `redis at ${redisEndpoint(target)} refused the configured database (${refusal.message}): kvm2 will not go on with database 0`,
  );
}

/** ERR_CONFIG when the server refused the configured database; call once connected. */
export function checkDatabase(redis: RedisConnection, target: RedisTarget): void {
  const refused = databaseRefusal(redis, target);
  if (refused !== undefined) throw refused;
}

/** Ahead of every other listener (BullMQ's, ours), so none of them sees the arguments. */
function scrubbingErrors<C extends RedisConnection>(redis: C): C {
  const scrub = (err: unknown): void => {
    withoutCommandArgs(err);
    if ((err as { command?: { name?: unknown } } | null)?.command?.name === 'select') {
      refusedDatabase.set(redis, err as Error);
    }
  };
  redis.prependListener('error', scrub);
  if (redis instanceof Cluster) redis.prependListener('node error', scrub);
  return redis;
}

function newRedis(target: RedisTarget, options: RedisOptions): RedisConnection {
  return scrubbingErrors(newConnection(target, options));
}

function newConnection(target: RedisTarget, options: RedisOptions): RedisConnection {
  if (typeof target === 'string') return new Redis(target, options);
  if ('cluster' in target) return newCluster(target.cluster, options);
  const sentinel = target.sentinel;
  return new Redis({
    ...options,
    sentinels: sentinel.nodes.map(({ host, port }) => ({ host, port })),
    name: sentinel.name,
    db: sentinel.db,
    ...credentials(sentinel),
    ...(sentinel.sentinelPassword === undefined
      ? {}
      : { sentinelPassword: sentinel.sentinelPassword }),
    ...(sentinel.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
    // Told by the sentinels of a new master at once, not at the next failed command.
    failoverDetector: true,
    reconnectOnError: reconnectOnReadonly,
  });
}

/**
 * A Cluster client: the per-node options are those a single connection would get; the queue
 * of commands while the client (re)learns the slots and the dial timeout are the cluster's
 * own. A command sent to a master that just lost its slots is redirected (MOVED) and the slot
 * table refreshed; one sent while a failover is being agreed (CLUSTERDOWN, TRYAGAIN) is tried
 * again after a short delay, as ioredis does.
 */
function newCluster(cluster: ClusterConfig, options: RedisOptions): Cluster {
  const { enableOfflineQueue, lazyConnect, retryStrategy, ...perNode } = options;
  const clusterOptions: ClusterOptions = {
    redisOptions: { ...perNode, ...credentials(cluster), ...(cluster.tls ? { tls: {} } : {}) },
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    clusterRetryStrategy: (times) => retryStrategy?.(times) ?? reconnectBackoff(times),
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
  };
  return new Cluster(
    cluster.nodes.map(({ host, port }) => ({ host, port })),
    clusterOptions,
  );
}

const coalesced = new WeakSet<object>();

/**
 * Commands written in one turn of the event loop leave in one write: the socket is corked at
 * the turn's first write and uncorked when the turn's I/O callbacks have run (setImmediate).
 * ioredis writes every command on its own (its auto-pipelining only joins the commands of one
 * synchronous run), and a producer's burst of enqueues issues thousands in a few turns. A lone
 * command waits for nothing but the rest of its own turn.
 *
 * Producers only: a worker's commands each end or begin a job, and holding them to the end of
 * the turn kept Redis idle while the worker read, then the worker idle while Redis ran the
 * whole batch (docs/benchmarks.md, #20 fifteenth slices).
 */
export function coalesceWrites<C extends RedisConnection>(redis: C): C {
  if (redis instanceof Cluster) {
    // Each node's connection, as the cluster makes it.
    redis.on('+node', (node: Redis) => coalesceWrites(node));
    return redis;
  }
  const patch = (): void => {
    const socket = redis.stream as Socket | undefined;
    if (socket === undefined || coalesced.has(socket)) return;
    coalesced.add(socket);
    let corked = false;
    const uncork = (): void => {
      corked = false;
      socket.uncork();
    };
    const write = socket.write.bind(socket) as (...args: Parameters<Socket['write']>) => boolean;
    socket.write = ((...args: Parameters<Socket['write']>): boolean => {
      if (!corked) {
        corked = true;
        socket.cork();
        setImmediate(uncork);
      }
      return write(...args);
    }) as Socket['write'];
  };
  redis.on('connect', patch);
  return redis;
}

const bounded = new WeakSet<RedisConnection>();

/**
 * The time a command asks Redis to wait, in ms (0: without end): XREAD/XREADGROUP's BLOCK, the
 * blocking pops' timeout, WAIT's. Undefined for a command that does not wait.
 */
function ownWaitMs(command: Command): number | undefined {
  if (command.name.toLowerCase() === 'wait') {
    const ms = Number(command.args[1]);
    return Number.isFinite(ms) ? Math.max(ms, 0) : undefined;
  }
  return command.extractBlockingTimeout() ?? undefined;
}

/**
 * The connection's commandTimeout, for a command that waits on purpose, counts from the end of
 * its wait: a consumer's `XREADGROUP … BLOCK 30000`, the watcher's 5 s XREAD and a Sentinel
 * WAIT of `confirmTimeout` are answered late by design, and must not fail as an outage for it.
 * One that waits without end (BLOCK 0) is given the longest timer there is. A command's first
 * timer is the one that counts (ioredis Command#setTimeout), so this one, set before ioredis
 * sets the connection's, stands; copies made by duplicateConnection get it too.
 */
function boundWaitingCommands<C extends RedisConnection>(redis: C): C {
  type Send = (command: Command, ...rest: unknown[]) => unknown;
  const connection = redis as unknown as { sendCommand: Send };
  const send = connection.sendCommand.bind(redis);
  connection.sendCommand = (command, ...rest) => {
    const waits = ownWaitMs(command);
    if (waits !== undefined) {
      command.setTimeout(
        waits === 0 ? MAX_TIMER_MS : Math.min(waits + WAITING_COMMAND_GRACE_MS, MAX_TIMER_MS),
      );
    }
    return send(command, ...rest);
  };
  bounded.add(redis);
  return redis;
}

/** A producer connection, not yet connected (see connectProducer). */
export function createProducerConnection(target: RedisTarget): RedisConnection {
  return boundWaitingCommands(coalesceWrites(newRedis(target, { ...producerRedisOptions })));
}

/**
 * A worker connection, for BullMQ Workers and blocking reads. Its commands leave as they are
 * issued, not coalesced (see coalesceWrites).
 */
export function createWorkerConnection(target: RedisTarget): RedisConnection {
  return newRedis(target, { ...workerRedisOptions });
}

/**
 * Another connection to the same Redis, with these options changed (its own socket). A
 * producer's copy keeps its command timeout, and its bound on commands that wait.
 */
export function duplicateConnection(
  redis: RedisConnection,
  options: Pick<RedisOptions, 'lazyConnect' | 'enableOfflineQueue'>,
): RedisConnection {
  const copy = scrubbingErrors(
    redis instanceof Cluster ? redis.duplicate(undefined, options) : redis.duplicate(options),
  );
  return bounded.has(redis) ? boundWaitingCommands(copy) : copy;
}

const noop = (): void => undefined;

/**
 * QUIT (so what was sent before it is answered first), then disconnect. On Sentinel, QUIT alone
 * leaves ioredis's failover detector (three subscriptions to the sentinels) open: only
 * disconnect() closes it, and once the sentinels are gone it would reconnect for ever. A
 * connection that is not ready is dropped at once, and so is one whose QUIT is not answered
 * within QUIT_TIMEOUT_MS (a Redis that stopped answering; disconnect() rejects what it holds).
 */
export async function closeConnection(redis: RedisConnection): Promise<void> {
  if (redis.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, QUIT_TIMEOUT_MS);
    });
    await Promise.race([redis.quit().then(noop, noop), gaveUp]);
    clearTimeout(timer);
  }
  redis.disconnect();
}

/** The passwords a target carries, so that no message repeats one (redisEndpoint drops them). */
function secretsOf(target: RedisTarget): string[] {
  if (typeof target === 'string') {
    try {
      const password = decodeURIComponent(new URL(target).password);
      return password === '' ? [] : [password];
    } catch {
      return [];
    }
  }
  const c = 'cluster' in target ? target.cluster : target.sentinel;
  const sentinelPassword = 'sentinel' in target ? target.sentinel.sentinelPassword : undefined;
  return [c.password, sentinelPassword].filter((p): p is string => p !== undefined && p !== '');
}

function unavailable(target: RedisTarget, cause: unknown): Kvm2Error {
  let why = cause instanceof Error ? cause.message : String(cause);
  for (const secret of secretsOf(target)) why = why.split(secret).join('***');
  const where = `redis at ${redisEndpoint(target)}`;
  // Redis's answer to AUTH (WRONGPASS), or to a command before it (NOAUTH): no outage, and
  // trying again will not help; said as such, with the same code as the other failures to
  // connect.
  const message = /^WRONGPASS/.test(why)
    ? `${where} refused the credentials (${why})`
    : /^NOAUTH/.test(why)
      ? `${where} asks for a password and none is configured (${why})`
      : `${where} is unreachable: ${why}`;
  return new Kvm2Error('ERR_REDIS_UNAVAILABLE', message, { cause: withoutCommandArgs(cause) });
}

// The first dial of each producer connection, while it is under way: calls made meanwhile (an
// app firing many at once on a new client) wait for it rather than fail.
const dialling = new WeakMap<RedisConnection, Promise<void>>();

/**
 * Resolves once the connection is ready. The first call dials (bounded by connectTimeout), and
 * calls made during that dial wait for it; while ioredis reconnects after an outage, callers get
 * ERR_REDIS_UNAVAILABLE at once. A failed dial is told by the connection's last `error` event
 * (WRONGPASS, ECONNREFUSED), not by connect()'s own rejection, which says only "Connection is
 * closed."; a Cluster's rejection ("None of startup nodes is available") says more than its
 * events do.
 */
export function connectProducer(redis: RedisConnection, target: RedisTarget): Promise<void> {
  const refused = databaseRefusal(redis, target);
  if (refused !== undefined) return Promise.reject(refused);
  if (redis.status === 'ready') return Promise.resolve();
  const pending = dialling.get(redis);
  if (pending !== undefined) return pending;
  if (redis.status !== 'wait') {
    return Promise.reject(unavailable(target, new Error(`connection is ${redis.status}`)));
  }
  let lastError: Error | undefined;
  const onError = (err: Error): void => {
    lastError = err;
  };
  redis.on('error', onError);
  const dial = redis.connect().then(
    () => {
      redis.off('error', onError);
      dialling.delete(redis);
      // The SELECT's refusal came before the ready check's reply: known by now.
      if (refusedDatabase.has(redis)) redis.disconnect();
      checkDatabase(redis, target);
    },
    (err: unknown) => {
      redis.off('error', onError);
      dialling.delete(redis);
      throw unavailable(target, redis instanceof Cluster ? err : (lastError ?? err));
    },
  );
  dialling.set(redis, dial);
  return dial;
}

// `Command timed out`: ioredis's commandTimeout (a producer's command Redis did not answer).
const OFFLINE =
  /enableOfflineQueue|UNBLOCKED|Connection is closed|Command timed out|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|max retries|READONLY|NOREPLICAS|LOADING|sentinels are unreachable|connection is (reconnecting|connecting|end|close)/i;

/**
 * True for a command that failed because Redis was away or changing hands (refused, reset,
 * reconnecting, not answering in time, a demoted master's READONLY, a restarted one still
 * LOADING): worth trying again
 * once the connection is back, unlike an answer Redis gave.
 */
export function isRedisOffline(err: unknown): boolean {
  if (err instanceof Kvm2Error) return err.code === 'ERR_REDIS_UNAVAILABLE';
  return OFFLINE.test(err instanceof Error ? err.message : '');
}

/** Maps a command's failure during an outage to ERR_REDIS_UNAVAILABLE; others pass through. */
export function asRedisError(target: RedisTarget, err: unknown): unknown {
  if (err instanceof Kvm2Error) return err;
  return isRedisOffline(err) ? unavailable(target, err) : withoutCommandArgs(err);
}
