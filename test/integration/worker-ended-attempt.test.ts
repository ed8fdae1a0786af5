// A run of an attempt that already ended (found by the chaos soak, twice in 2,000 requests):
// the first run wrote its final result (succeeded) and its worker died before BullMQ heard, so
// the job stalled and came back. Run again while its host was away, the create failed
// (`retrying`), and the retry wrote a second final result (superseded, attempt 2). Now the
// rerun ends with the result already written: the job completes, no second result, the host is
// not touched. Real parts: the machine's libvirtd behind a private sshd (stopped here), Redis,
// a real `kvm2 worker`; the first run is played by the test (it takes the job from the queue as
// BullMQ's worker does and writes the attempt's final result as the runner does).
import { randomUUID } from 'node:crypto';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostQueueName } from '../../queues/names.js';
import { appendRunResult } from '../../queues/results.js';
import { waitUntil } from '../harness/fault-kit.js';
import { startQueueFleet, type QueueFleet } from '../harness/queue-fleet.js';
import { resultsOfJob } from '../harness/results.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

let fleet: QueueFleet;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  fleet = await startQueueFleet('ea');
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await fleet?.cleanup();
}, 120_000);

describe('an attempt whose final result was written before its worker died', () => {
  it('ends with that result when it runs again: completed, no second result, the host untouched', async () => {
    const { redis, prefix } = fleet.scope;
    const client = fleet.client();
    const name = fleet.name('ended');
    const queue = hostQueueName('h1');
    let jobId = '';
    let sshdDown = false;
    try {
      ({ jobId } = await client.create(
        { host: 'h1', name, image: fleet.image, tag: 'ea' },
        { wait: false },
      ));
      // The first run: taken from the queue (active, attempt 1), its final result written with
      // the attempt named in the job's hash, and then nothing: its worker is gone.
      const connection = { host: '127.0.0.1', port: Number(new URL(fleet.scope.url).port) };
      const first = new Worker(queue, null, { connection, prefix, lockDuration: 1_000 });
      const job = await first.getNextJob(randomUUID());
      expect(job?.id).toBe(jobId);
      await appendRunResult(
        redis,
        prefix,
        {
          jobId,
          op: 'create',
          outcome: 'succeeded',
          attempt: 1,
          timestamp: Date.now(),
          instanceId: `h1/${name}`,
          state: 'running',
        },
        `${prefix}:${queue}:${jobId}`,
      );
      await first.close(true);

      // Its host away: a run of the create now would fail and retry.
      await fleet.sshd.down();
      sshdDown = true;
      worker = await startWorkerProcess(fleet.writeConfig());
      await waitUntil(
        async () => (await redis.zscore(`${prefix}:${queue}:completed`, jobId)) !== null,
        60_000,
        'the stalled job to run again and complete',
        250,
      );
      const results = await resultsOfJob(redis, prefix, jobId);
      expect(results.map((r) => `${r.outcome} ${r.attempt}`)).toEqual(['succeeded 1']);
      expect(Number(await redis.hget(`${prefix}:${queue}:${jobId}`, 'stc'))).toBe(1);
      expect(await fleet.domains()).toEqual([]);
    } finally {
      if (sshdDown) await fleet.sshd.up();
      await client.close();
    }
  }, 120_000);
});
