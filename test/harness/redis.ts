// The local Redis for integration tests (scripts/setup.sh starts it; REDIS_URL overrides).
// Each test file takes a fresh, hash-tagged random key prefix and deletes every key under it
// when done, so files never see each other's keys and nothing is left behind.
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';

export interface RedisScope {
  /** `{kvm2t-<label>-<hex>}`: hash-tagged like the real prefix. */
  readonly prefix: string;
  readonly url: string;
  /** A plain connection for the test's own reads and writes. */
  readonly redis: Redis;
  /** Every key under the prefix, for assertions. */
  keys(): Promise<string[]>;
  /** Deletes every key under the prefix and closes the connection. */
  cleanup(): Promise<void>;
}

/**
 * The test Redis's URL with a user and password it refuses (WRONGPASS), and that password: ioredis
 * hangs the AUTH command, password included, on the error, which no log or message may show.
 */
export function refusedCredentials(url: string): {
  readonly url: string;
  readonly password: string;
} {
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const refused = new URL(url);
  refused.username = 'kvm2-no-such-user';
  refused.password = password;
  return { url: refused.href, password };
}

/** Escapes Redis glob characters, so the prefix is matched literally. */
function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

export async function redisScope(label: string): Promise<RedisScope> {
  const prefix = `{kvm2t-${label}-${randomBytes(6).toString('hex')}}`;
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  const pattern = `${globLiteral(prefix)}*`;
  return {
    prefix,
    url: REDIS_URL,
    redis,
    keys: () => scanKeys(redis, pattern),
    async cleanup() {
      try {
        const keys = await scanKeys(redis, pattern);
        for (let i = 0; i < keys.length; i += 500) {
          await redis.unlink(...keys.slice(i, i + 500));
        }
      } finally {
        await redis.quit().catch(() => redis.disconnect());
      }
    },
  };
}

/**
 * The arguments of a test's own redis-server on loopback: `port`, data in `dir`, no snapshots,
 * noeviction (what SPEC §8 asks of a production Redis), the AOF as `appendonly` says.
 */
export function redisServerArgs(
  port: number,
  dir: string,
  options: { readonly appendonly?: 'no' | 'always' } = {},
): string[] {
  const aof = options.appendonly ?? 'no';
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    ...(aof === 'no' ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', aof]),
    '--maxmemory-policy',
    'noeviction',
  ];
}

/** Runs `fn` on a one-off connection to the redis-server on loopback `port`, then drops it. */
export async function askRedis<T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => undefined); // refused until the server listens: expected
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

/** SIGKILLs the redis-servers a harness started, waits until each has exited, removes `dir`. */
export async function killServers(children: readonly ChildProcess[], dir: string): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) resolve();
          else child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
  fs.rmSync(dir, { recursive: true, force: true });
}
