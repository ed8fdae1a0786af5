// A real Redis Cluster on loopback for one test file (issue #15): three masters and a replica
// of each (`redis-server --cluster-enabled yes`, joined by `redis-cli --cluster create`), each
// on a free port with its cluster bus on another (`--cluster-port`: port+10000 may not be free
// or even exist), nothing written outside its own temporary directory. `failover(key)` has the
// replica of the master that holds the key's slot take over (CLUSTER FAILOVER) and resolves
// once every node agrees; stop() ends every process it started.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { freePort, LOOPBACK } from './loopback.js';
import { askRedis, killServers, redisServerArgs } from './redis.js';
import { waitUntil } from './fault-kit.js';

const run = promisify(execFile);
const MASTERS = 3;

export interface RedisCluster {
  /** The config's `redis.cluster` for this cluster. */
  readonly config: { nodes: string[] };
  /** `host:port` of the master that holds `key`'s slot now. */
  masterOf(key: string): Promise<string>;
  /** A Cluster connection for the test's own reads. */
  connect(): Promise<Cluster>;
  /** CLUSTER FAILOVER on the replica of `key`'s master; resolves with the new master. */
  failover(key: string): Promise<string>;
  /**
   * SIGKILLs `key`'s master; resolves once its replica has taken over (after the node
   * timeout) and the others agree, with the new master. The killed node stays down.
   */
  killMaster(key: string): Promise<string>;
  stop(): Promise<void>;
}

/** Until `check` holds (a refused connection counts as not yet), at most 30 s. */
const until = (what: string, check: () => Promise<boolean>): Promise<void> =>
  waitUntil(() => check().catch(() => false), 30_000, `redis cluster: ${what}`);

interface NodeLine {
  readonly id: string;
  readonly port: number;
  readonly role: 'master' | 'replica';
  readonly masterId: string | undefined;
  readonly slots: readonly [number, number][];
}

/** CLUSTER NODES, as seen by the node on `port`. */
async function clusterNodes(port: number): Promise<NodeLine[]> {
  const text = (await askRedis(port, (r) => r.call('CLUSTER', 'NODES'))) as string;
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', address = '', flags = '', master = '', , , , , ...slots] = line.split(' ');
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1]),
        role: flags.split(',').includes('master') ? 'master' : 'replica',
        masterId: master === '-' ? undefined : master,
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [from = '', to = from] = s.split('-');
            return [Number(from), Number(to)] as [number, number];
          }),
      };
    });
}

export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-cluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  const byPort = new Map<number, ChildProcess>();
  const kill = (): Promise<void> => killServers(children, dir);
  try {
    for (let i = 0; i < MASTERS * 2; i++) {
      const [port, busPort] = [await freePort(), await freePort()];
      ports.push(port);
      const data = fs.mkdtempSync(path.join(dir, `node-${port}-`));
      const args = [
        ...redisServerArgs(port, data),
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        path.join(data, 'nodes.conf'),
        '--cluster-port',
        String(busPort),
        '--cluster-node-timeout',
        '2000',
      ];
      const child = spawn('redis-server', args, { stdio: 'ignore', cwd: data });
      children.push(child);
      byPort.set(port, child);
    }
    for (const port of ports) {
      await until(`node ${port} answers`, () => askRedis(port, (r) => r.ping().then(() => true)));
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...ports.map((p) => `${LOOPBACK}:${p}`),
      '--cluster-replicas',
      '1',
      '--cluster-yes',
    ]);
    const down = new Set<number>();
    const up = (): number[] => ports.filter((p) => !down.has(p));
    const allAgree = async (): Promise<boolean> => {
      for (const port of up()) {
        const info = (await askRedis(port, (r) => r.call('CLUSTER', 'INFO'))) as string;
        if (!/cluster_state:ok/.test(info) || !/cluster_known_nodes:6/.test(info)) return false;
        // A replica shows as a master without slots until gossip says whose it is; a killed
        // node is flagged failed and no longer counts.
        const nodes = (await clusterNodes(port)).filter((n) => !down.has(n.port));
        const masters = nodes.filter((n) => n.role === 'master' && n.slots.length > 0);
        const replicas = nodes.filter((n) => n.role === 'replica' && n.masterId !== undefined);
        if (masters.length !== MASTERS || replicas.length !== MASTERS - down.size) return false;
        const role = await askRedis(port, (r) => r.info('replication'));
        if (/role:slave/.test(role) && !/master_link_status:up/.test(role)) return false;
      }
      return true;
    };
    await until('every node sees the cluster ok', allAgree);

    const slotOf = (key: string): Promise<number> =>
      askRedis(up()[0] ?? 0, async (r) => Number(await r.call('CLUSTER', 'KEYSLOT', key)));
    const ownerOf = async (key: string): Promise<NodeLine> => {
      const slot = await slotOf(key);
      const nodes = (await clusterNodes(up()[0] ?? 0)).filter((n) => !down.has(n.port));
      const owner = nodes.find(
        (n) => n.role === 'master' && n.slots.some(([a, b]) => slot >= a && slot <= b),
      );
      if (owner === undefined) throw new Error(`redis cluster: nobody holds slot ${slot}`);
      return owner;
    };
    const ownerAndReplica = async (
      key: string,
    ): Promise<{ owner: NodeLine; replica: NodeLine }> => {
      const owner = await ownerOf(key);
      const replica = (await clusterNodes(owner.port)).find((n) => n.masterId === owner.id);
      if (replica === undefined) throw new Error(`redis cluster: ${owner.port} has no replica`);
      return { owner, replica };
    };
    const takenOverBy = async (key: string, port: number): Promise<string> => {
      await until('the replica takes over and every node agrees', async () => {
        const now = await ownerOf(key);
        return now.port === port && (await allAgree());
      });
      return `${LOOPBACK}:${port}`;
    };
    return {
      config: { nodes: ports.map((p) => `${LOOPBACK}:${p}`) },
      masterOf: async (key) => `${LOOPBACK}:${(await ownerOf(key)).port}`,
      async connect() {
        const c = new Cluster(
          up().map((port) => ({ host: LOOPBACK, port })),
          { lazyConnect: true },
        );
        await c.connect();
        return c;
      },
      async failover(key) {
        const { replica } = await ownerAndReplica(key);
        await askRedis(replica.port, (r) => r.call('CLUSTER', 'FAILOVER'));
        return takenOverBy(key, replica.port);
      },
      async killMaster(key) {
        const { owner, replica } = await ownerAndReplica(key);
        down.add(owner.port);
        byPort.get(owner.port)?.kill('SIGKILL');
        return takenOverBy(key, replica.port);
      },
      stop: kill,
    };
  } catch (err) {
    await kill();
    throw err;
  }
}
