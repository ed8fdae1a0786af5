// kvm2 on Redis Cluster (issue #15): a real Cluster on loopback (three masters, a replica of
// each), a real `kvm2 worker` and the client library configured with `redis.cluster`, the real
// libvirtd through sshd. Every key of the fleet's prefix is in one slot (its hash tag); a burst
// of creates with a CLUSTER FAILOVER of that slot's master in the middle
// (test/harness/failover-burst.ts says what is checked after it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { burstAcrossFailover } from '../harness/failover-burst.js';
import { startQueueFleet, type QueueFleet } from '../harness/queue-fleet.js';
import { startRedisCluster, type RedisCluster } from '../harness/redis-cluster.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

let cluster: RedisCluster;
let fleet: QueueFleet;
let worker: WorkerProcess | undefined;
let client: Kvm2Client;
let overrides: Record<string, unknown>;

beforeAll(async () => {
  cluster = await startRedisCluster();
  fleet = await startQueueFleet('cl');
  overrides = { redis: { cluster: cluster.config, prefix: fleet.scope.prefix } };
  worker = await startWorkerProcess(fleet.writeConfig(overrides));
  client = fleet.client(overrides);
}, 120_000);

afterAll(async () => {
  await client?.close();
  await worker?.stop();
  await fleet?.cleanup();
  await cluster?.stop();
}, 120_000);

describe('on Redis Cluster', () => {
  it('a burst of creates across a CLUSTER FAILOVER of the master holding the prefix: every result, each instance once, nothing left active', async () => {
    const slotKey = `${fleet.scope.prefix}:x`;
    await burstAcrossFailover({
      fleet,
      client,
      label: 'cl',
      size: 8,
      master: () => cluster.masterOf(slotKey),
      failover: () => cluster.failover(slotKey),
      connect: () => cluster.connect(),
    });
    // Every key kvm2 and BullMQ wrote sits on the one master of the prefix's slot.
    const conn = await cluster.connect();
    try {
      const owner = await cluster.masterOf(slotKey);
      const node = conn
        .nodes('master')
        .find((n) => `${n.options.host}:${n.options.port}` === owner);
      expect(node).toBeDefined();
      const keys = (await node?.keys('*')) ?? [];
      expect(keys.length).toBeGreaterThan(5);
      expect(keys.filter((k) => !k.startsWith(fleet.scope.prefix))).toEqual([]);
      for (const other of conn.nodes('master').filter((n) => n !== node)) {
        expect(await other.dbsize()).toBe(0);
      }
    } finally {
      conn.disconnect();
    }
  }, 300_000);

  it('a burst of creates while that master is SIGKILLed and its replica takes over: the same', async () => {
    const slotKey = `${fleet.scope.prefix}:x`;
    await burstAcrossFailover({
      fleet,
      client,
      label: 'ck',
      size: 8,
      master: () => cluster.masterOf(slotKey),
      failover: () => cluster.killMaster(slotKey),
      connect: () => cluster.connect(),
    });
  }, 300_000);
});
