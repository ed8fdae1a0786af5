// A real Redis Sentinel group on loopback for one test file (issue #15): a master, a replica of
// it and three sentinels (`redis-server FILE --sentinel`) watching the master as `kvm2-master`
// with a quorum of two, each on a free port, nothing written outside its own temporary
// directory. `failover()` asks the sentinels to promote the replica (SENTINEL FAILOVER) and
// resolves once they name the new master; stop() ends every process it started.
//
// Three of Sentinel's periods are shortened for the tests (SENTINEL DEBUG, Redis 7): a sentinel
// reads a replica's INFO every 10 s, so after one failover it took 12-17 s to see the demoted
// master back in sync and ready to be promoted; here it reads every second. And a sentinel whose
// timer runs 2 s late (a busy 2-core machine) goes into TILT and does nothing for 30 s, so a
// failover asked for then is carried out too late; here TILT needs a 5 s stall and lasts 5 s.
// And a sentinel turns the demoted master into a replica only once it has reported itself master
// for four hello periods (8 s); here a hello goes out every 500 ms.
// Each sentinel logs to its own file, whose events a failover that does not happen quotes.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort, LOOPBACK } from './loopback.js';
import { askRedis, killServers, redisServerArgs } from './redis.js';
import { waitUntil } from './fault-kit.js';

export const SENTINEL_MASTER = 'kvm2-master';

export interface SentinelGroup {
  /** The config's `redis.sentinel` for this group. */
  readonly config: { name: string; nodes: string[] };
  /** `host:port` of the master the sentinels name now. */
  master(): Promise<string>;
  /** A plain connection to the master the sentinels name now (for the test's own reads). */
  connectMaster(): Promise<Redis>;
  /** SENTINEL FAILOVER, then waits until the sentinels name another master. Returns it. */
  failover(): Promise<string>;
  stop(): Promise<void>;
}

/** Until `check` holds (a refused connection counts as not yet), at most `timeoutMs`. */
const until = (what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> =>
  waitUntil(() => check().catch(() => false), timeoutMs, `sentinel group: ${what}`);

/** How long one SENTINEL FAILOVER may take before it is asked for again (its timeout is 5 s). */
const FAILOVER_ATTEMPT_MS = 15_000;
const FAILOVER_ATTEMPTS = 4;

/** The last of the sentinels' logged events (+tilt, -failover-abort-…, +switch-master …). */
function sentinelEvents(dir: string): string {
  return fs
    .readdirSync(dir)
    .filter((f) => /^sentinel-\d+\.log$/.test(f))
    .flatMap((f) =>
      fs
        .readFileSync(path.join(dir, f), 'utf8')
        .split('\n')
        .filter((line) => /[+-][a-z-]+ /.test(line))
        .slice(-15)
        .map((line) => `  ${f}: ${line}`),
    )
    .join('\n');
}

export async function startSentinelGroup(): Promise<SentinelGroup> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-sentinel-'));
  const children: ChildProcess[] = [];
  const start = (args: string[]): void => {
    children.push(spawn('redis-server', args, { stdio: 'ignore', cwd: dir }));
  };
  // As docs/operations.md asks of a Sentinel group: a master without a replica refuses writes,
  // so the old master takes none once its replica is promoted (they would be lost).
  const dataArgs = (port: number): string[] => [
    ...redisServerArgs(port, fs.mkdtempSync(path.join(dir, `data-${port}-`))),
    '--min-replicas-to-write',
    '1',
    '--min-replicas-max-lag',
    '5',
    // A replica's full resync starts at once, not after the 5 s a master waits by default for
    // more replicas to share one transfer (there is one replica).
    '--repl-diskless-sync-delay',
    '0',
  ];
  try {
    const [masterPort, replicaPort] = [await freePort(), await freePort()];
    start(dataArgs(masterPort));
    await until('the master answers', () => askRedis(masterPort, (r) => r.ping().then(() => true)));
    start([...dataArgs(replicaPort), '--replicaof', LOOPBACK, String(masterPort)]);
    await until('the replica is in sync', () =>
      askRedis(replicaPort, async (r) => /master_link_status:up/.test(await r.info('replication'))),
    );
    const sentinelPorts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      sentinelPorts.push(port);
      const file = path.join(dir, `sentinel-${port}.conf`);
      fs.writeFileSync(
        file,
        [
          `port ${port}`,
          `bind ${LOOPBACK}`,
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER} ${LOOPBACK} ${masterPort} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
          `sentinel failover-timeout ${SENTINEL_MASTER} 5000`,
          `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
          `logfile ${path.join(dir, `sentinel-${port}.log`)}`,
          '',
        ].join('\n'),
      );
      start([file, '--sentinel']);
      await until(`sentinel ${port} answers`, () =>
        askRedis(port, (r) =>
          r
            .call('SENTINEL', 'DEBUG', 'info-period', '1000', 'publish-period', '500')
            .then(() => r.call('SENTINEL', 'DEBUG', 'tilt-trigger', '5000'))
            .then(() => r.call('SENTINEL', 'DEBUG', 'tilt-period', '5000'))
            .then(() => true),
        ),
      );
    }
    // Every sentinel knows the replica and the other sentinels: a failover can be agreed.
    for (const port of sentinelPorts) {
      await until(`sentinel ${port} sees the replica and its peers`, () =>
        askRedis(port, async (r) => {
          const replicas = (await r.call('SENTINEL', 'REPLICAS', SENTINEL_MASTER)) as unknown[];
          const peers = (await r.call('SENTINEL', 'SENTINELS', SENTINEL_MASTER)) as unknown[];
          return replicas.length === 1 && peers.length === 2;
        }),
      );
    }

    const master = async (): Promise<string> => {
      const [host, port] = (await askRedis(sentinelPorts[0] ?? 0, (r) =>
        r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER),
      )) as [string, string];
      return `${host}:${port}`;
    };
    /** `host:port` of each replica the first sentinel knows. */
    const replicaAddresses = async (): Promise<string[]> => {
      const replicas = (await askRedis(sentinelPorts[0] ?? 0, (r) =>
        r.call('SENTINEL', 'REPLICAS', SENTINEL_MASTER),
      )) as string[][];
      return replicas.map((fields) => fields[fields.indexOf('name') + 1] ?? '');
    };
    return {
      config: { name: SENTINEL_MASTER, nodes: sentinelPorts.map((p) => `${LOOPBACK}:${p}`) },
      master,
      async connectMaster() {
        const [host, port] = (await master()).split(':');
        const r = new Redis({ host, port: Number(port), lazyConnect: true });
        await r.connect();
        return r;
      },
      async failover() {
        const before = await master();
        // A failover needs a replica in sync; after an earlier one, the demoted master is
        // that replica only once it has resynced with the new master. Every sentinel must have
        // seen it so: one that still saw it report itself master would, once it is promoted,
        // turn it back into a replica (the promotion then times out and the failover aborts).
        const [, masterPort = '0'] = before.split(':');
        const inSync = async (replica: string): Promise<boolean> => {
          const info = await askRedis(Number(replica.split(':')[1]), (r) => r.info('replication'));
          if (!/master_link_status:up/.test(info) || !info.includes(`master_port:${masterPort}`))
            return false;
          for (const port of sentinelPorts) {
            const seen = await askRedis(port, async (r) => {
              const replicas = (await r.call(
                'SENTINEL',
                'REPLICAS',
                SENTINEL_MASTER,
              )) as string[][];
              return replicas.some((fields) => {
                const f = new Map<string, string>();
                for (let i = 0; i + 1 < fields.length; i += 2)
                  f.set(fields[i] ?? '', fields[i + 1] ?? '');
                return (
                  f.get('name') === replica &&
                  f.get('flags') === 'slave' &&
                  f.get('role-reported') === 'slave' &&
                  f.get('master-link-status') === 'ok'
                );
              });
            });
            if (!seen) return false;
          }
          return true;
        };
        await until('the replica is in sync, as every sentinel sees it', () =>
          replicaAddresses().then(async (all) => {
            for (const replica of all) if (await inSync(replica)) return true;
            return false;
          }),
        );
        // A failover a sentinel aborts (or one it could not start while in TILT) leaves the
        // master as it was: it is asked for again, a few times, before the test is failed with
        // what the sentinels logged.
        let after = before;
        const promoted = async (): Promise<boolean> => {
          after = await master();
          if (after === before) return false;
          const [, port] = after.split(':');
          return askRedis(Number(port), async (r) =>
            /role:master/.test(await r.info('replication')),
          );
        };
        for (let attempt = 1; ; attempt++) {
          const asked = await askRedis(sentinelPorts[0] ?? 0, (r) =>
            r.call('SENTINEL', 'FAILOVER', SENTINEL_MASTER),
          ).then(
            () => 'OK',
            (err: unknown) => String(err),
          );
          try {
            await until('the sentinels name a new master', promoted, FAILOVER_ATTEMPT_MS);
            return after;
          } catch (err) {
            if (attempt < FAILOVER_ATTEMPTS) continue;
            throw new Error(
              `${(err as Error).message} (${attempt} times; the last SENTINEL FAILOVER said ${asked}); the sentinels logged:\n${sentinelEvents(dir)}`,
            );
          }
        }
      },
      stop: () => killServers(children, dir),
    };
  } catch (err) {
    await killServers(children, dir);
    throw err;
  }
}
