// The queue product end to end with real worker processes (`kvm2 worker`), real Redis, the
// real libvirtd through sshd: create and delete through the client library, GC, health
// schedulers and the health hash, the worker's endpoints, and jobs that must fail at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startQueueFleet, type QueueFleet } from '../harness/queue-fleet.js';
import { virsh } from '../harness/virsh.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

let fleet: QueueFleet;
let worker: WorkerProcess | undefined;
let configPath = '';

beforeAll(async () => {
  fleet = await startQueueFleet('wk');
  configPath = fleet.writeConfig();
  worker = await startWorkerProcess(configPath);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await fleet?.cleanup();
}, 120_000);

describe('create and delete through the client library', () => {
  it('create ends with a running domain and a succeeded result; delete removes it', async () => {
    const client = fleet.client();
    try {
      const name = fleet.name('cd');
      const created = await client.create(
        { host: 'h1', name, image: fleet.image, tag: 'wk', userData: '#cloud-config\n' },
        { wait: false },
      );
      const result = await client.waitFor(created.jobId, { timeoutMs: 60_000 });
      expect(result).toMatchObject({
        outcome: 'succeeded',
        op: 'create',
        instanceId: `h1/${name}`,
      });
      expect(result.state).toMatch(/^(running|provisioning)$/);
      expect((await virsh(['domstate', name])).trim()).toBe('running');

      const deleted = await client.delete(created.id);
      const gone = await client.waitFor(deleted.jobId, { timeoutMs: 60_000 });
      expect(gone).toMatchObject({ outcome: 'succeeded', op: 'delete', state: 'deleted' });
      expect(await fleet.domains()).not.toContain(name);
      expect(await fleet.volumes()).toEqual([]);
    } finally {
      await client.close();
    }
  }, 120_000);
});
