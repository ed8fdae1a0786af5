// kvm2 on Redis Sentinel (issue #15): a real Sentinel group on loopback (a master, a replica,
// three sentinels), a real `kvm2 worker` and the client library configured with
// `redis.sentinel`, the real libvirtd through sshd. A burst of creates with a SENTINEL FAILOVER
// in the middle (test/harness/failover-burst.ts says what is checked after it).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendResult } from '../../queues/results.js';
import { waitUntil } from '../harness/fault-kit.js';
import { result } from '../harness/queue-requests.js';
import type { Kvm2Client } from '../../queues/client.js';
import { burstAcrossFailover } from '../harness/failover-burst.js';
import { startQueueFleet, type QueueFleet } from '../harness/queue-fleet.js';
import { startSentinelGroup, type SentinelGroup } from '../harness/redis-sentinel.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

let group: SentinelGroup;
let fleet: QueueFleet;
let worker: WorkerProcess | undefined;
let client: Kvm2Client;

beforeAll(async () => {
  group = await startSentinelGroup();
  fleet = await startQueueFleet('sn');
  const overrides = { redis: { sentinel: group.config, prefix: fleet.scope.prefix } };
  worker = await startWorkerProcess(fleet.writeConfig(overrides));
  client = fleet.client(overrides);
}, 120_000);

afterAll(async () => {
  await client?.close();
  await worker?.stop();
  await fleet?.cleanup();
  await group?.stop();
}, 120_000);

describe('on Redis Sentinel', () => {
  it('a burst of creates across a SENTINEL FAILOVER: every result, each instance once, nothing left active', async () => {
    await burstAcrossFailover({
      fleet,
      client,
      label: 'sn',
      size: 8,
      master: () => group.master(),
      failover: () => group.failover(),
      connect: () => group.connectMaster(),
    });
  }, 300_000);

  it('a closed client leaves no connection behind (ioredis keeps the failover detector open after QUIT)', async () => {
    const sockets = (): number =>
      process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
    const before = sockets();
    const other = fleet.client({ redis: { sentinel: group.config, prefix: fleet.scope.prefix } });
    const jobId = randomUUID();
    const waiting = other.waitFor(jobId, { timeoutMs: 20_000 });
    const master = await group.connectMaster();
    try {
      await waitUntil(() => sockets() > before + 1, 10_000, 'the wait to connect');
      await appendResult(master, fleet.scope.prefix, result(jobId, 'succeeded'));
      await expect(waiting).resolves.toMatchObject({ jobId, outcome: 'succeeded' });
    } finally {
      master.disconnect();
      await other.close();
    }
    // Its connection, the reader's, and each one's three subscriptions to the sentinels.
    await waitUntil(() => sockets() <= before, 5_000, 'every socket of the client to close');
  }, 60_000);
});
