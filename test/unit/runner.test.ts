// workers/runner.ts: a run that cannot even start (a tracer or propagator that throws) is not
// left counted as active, nor kept among the runs shutdown would cancel.
import type { Tracer } from '@opentelemetry/api';
import type { Job } from 'bullmq';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import type { WorkerServices } from '../../workers/run/services.js';
import { WorkerMetrics } from '../../workers/run/metrics.js';
import { makeProcessor, type JobReturn } from '../../workers/runner.js';
import { JobRuns } from '../../workers/run/cancellation.js';

it('a processor whose span cannot start rejects, and leaves no active run behind', async () => {
  const runs = new JobRuns();
  const metrics = new WorkerMetrics();
  const tracer = {
    startActiveSpan: () => {
      throw new Error('tracer broke');
    },
  } as unknown as Tracer;
  // Only what a run touches before its span starts.
  const logger = pino({ level: 'silent' });
  const env = { runs, metrics, tracer, logger } as unknown as WorkerServices;
  const job = { name: 'delete', id: '7', attemptsMade: 0, data: { id: 'h1/x' } } as Job<
    unknown,
    JobReturn
  >;

  const processor = makeProcessor(env, 'host.h1');
  await expect(processor(job, 'token')).rejects.toThrow('tracer broke');
  expect(runs.active).toBe(0);
  expect(metrics.activeTotal()).toBe(0);
});
