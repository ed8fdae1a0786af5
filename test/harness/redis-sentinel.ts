// A real Redis Sentinel group on loopback for one test file (issue #15): a master, a replica of
// it and three sentinels (`redis-server FILE --sentinel`) watching the master as `kvm2-master`
// with a quorum of two, each on a free port, nothing written outside its own temporary
// directory. `failover()` asks the sentinels to promote the replica (SENTINEL FAILOVER) and
// resolves once they name the new master; stop() ends every process it started.
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

/** Until `check` holds (a refused connection counts as not yet), at most 20 s. */
const until = (what: string, check: () => Promise<boolean>): Promise<void> =>
  waitUntil(() => check().catch(() => false), 20_000, `sentinel group: ${what}`);

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
          '',
        ].join('\n'),
      );
      start([file, '--sentinel']);
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
        // that replica only once it has resynced with the new master.
        await until('a replica is in sync', () =>
          askRedis(sentinelPorts[0] ?? 0, async (r) => {
            const replicas = (await r.call('SENTINEL', 'REPLICAS', SENTINEL_MASTER)) as string[][];
            return replicas.some((fields) => {
              const f = new Map<string, string>();
              for (let i = 0; i + 1 < fields.length; i += 2)
                f.set(fields[i] ?? '', fields[i + 1] ?? '');
              return f.get('flags') === 'slave' && f.get('master-link-status') === 'ok';
            });
          }),
        );
        await askRedis(sentinelPorts[0] ?? 0, (r) =>
          r.call('SENTINEL', 'FAILOVER', SENTINEL_MASTER),
        );
        let after = before;
        await until('the sentinels name a new master', async () => {
          after = await master();
          if (after === before) return false;
          const [, port] = after.split(':');
          return askRedis(Number(port), async (r) =>
            /role:master/.test(await r.info('replication')),
          );
        });
        return after;
      },
      stop: () => killServers(children, dir),
    };
  } catch (err) {
    await killServers(children, dir);
    throw err;
  }
}
