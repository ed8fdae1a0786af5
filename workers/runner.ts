// One job run, whatever the queue (SPEC §8): validate the data (Redis may hold anything), run
// the processor in a span continuing the producer's trace, append the attempt's result to the
// results stream, and tell BullMQ what happened:
//   succeeded / superseded → completed (the result is the job's return value)
//   transient error        → thrown: BullMQ retries with backoff while attempts remain
//   any other kind         → UnrecoverableError: failed at once
//   delete's not_found     → succeeded (the instance is gone, which is what was asked)
//   delay                  → moveToDelayed + DelayedError: no attempt spent, no slot held
import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { DelayedError, UnrecoverableError, type Processor } from 'bullmq';
import type { Logger } from 'pino';
import { hostOfQueue } from '../queues/names.js';
import { currentTraceContext } from '../queues/client.js';
import { Kvm2Error } from '../src/errors/error.js';
import { formatInstanceId } from '../src/provider/core/ids.js';
import {
  JOB_NAMES,
  traceContextSchema,
  validateJob,
  type JobName,
  type TraceContext,
} from '../queues/registry.js';
import {
  appendRunResult,
  finalOfAttempt,
  resultEnding,
  type JobResult,
} from '../queues/results.js';
import { endWithCompletion } from './run/completion.js';
import { releaseUnclaimedBegin } from './run/admission.js';
import { classifyError } from '../src/errors/classify.js';
import { jobRun, RunStart, type RunContext } from './run/job-run.js';
import type { WorkerServices } from './run/services.js';
import { KeyBusyError } from './locks/job-locks.js';
import type { Lease } from './locks/redis-locks.js';
import { processCreate, processDelete, processGet } from './processors/host.js';
import { processGc, processHealth } from './processors/fleet.js';
import { busyDelay, delay, type ResultFields, type Step } from './run/outcome.js';

/** What a completed job returns (Bull Board shows it): the result, never request data. */
export type JobReturn = JobResult;

/**
 * The trace context the producer put in the job's data, when it is well formed: what a result
 * carries when this process runs no OTel SDK (then no span of its own has a context to give).
 */
export function producerTraceContext(data: unknown): TraceContext | undefined {
  const parsed = traceContextSchema.safeParse(
    (data as { traceContext?: unknown } | null)?.traceContext,
  );
  return parsed.success ? parsed.data : undefined;
}

/**
 * The job's name as metrics, spans and log lines carry it: one of the job names, else
 * `unknown` (anyone can add a job of any name to a queue; each name would be a series of its
 * own for the process's life). The validation's message names what it was.
 */
export function opLabel(name: string): string {
  return (JOB_NAMES as readonly string[]).includes(name) ? name : 'unknown';
}

function producerContext(data: unknown): typeof ROOT_CONTEXT {
  const carrier = (data as { traceContext?: unknown } | null)?.traceContext;
  if (typeof carrier !== 'object' || carrier === null) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The instance a job's (not yet validated) data names, for spans and logs; undefined if none. */
export function instanceOf(data: unknown): string | undefined {
  const d = data as { id?: unknown; host?: unknown; name?: unknown } | null;
  if (typeof d?.id === 'string') return d.id;
  if (typeof d?.host !== 'string' || typeof d.name !== 'string') return undefined;
  try {
    return formatInstanceId(d.host, d.name);
  } catch {
    return undefined; // not an instance id: the validation names the field
  }
}

interface RunTimes {
  endedAt: number | undefined;
}

/**
 * The processor takes no third parameter on purpose: BullMQ then makes no AbortController of
 * its own per job; the run's comes from env.runs, which shutdown cancels (workers/run/cancellation.ts).
 */
export function makeProcessor(env: WorkerServices, queue: string): Processor<unknown, JobReturn> {
  return (job, token) => {
    const startedAt = Date.now();
    // A delayed run leaves the queue's active set (freeing its global slot) at moveToDelayed,
    // before the processor returns: its end is taken there.
    const run: RunTimes = { endedAt: undefined };
    const op = opLabel(job.name);
    const instance = instanceOf(job.data);
    const attributes = {
      'kvm2.queue': queue,
      'kvm2.job.id': job.id ?? '',
      'kvm2.job.name': op,
      'kvm2.attempt': job.attemptsMade + 1,
      ...(instance === undefined ? {} : { 'kvm2.instance': instance }),
    };
    let bound: Logger | undefined;
    const logger = (): Logger => (bound ??= env.logger.child({ queue, job: job.id, op, instance }));
    const controller = env.runs.start();
    env.metrics.active(queue, 1);
    // try/finally in async functions, not `.finally()` chains: each of those cost a job two
    // promises and their microtask turns (bench/queue's profile).
    const traced = async (): Promise<JobReturn> => {
      try {
        return await env.tracer.startActiveSpan(
          `kvm2.job.${op}`,
          { kind: SpanKind.CONSUMER, attributes },
          producerContext(job.data),
          async (span) => {
            const context = new RunStart(
              env,
              job,
              queue,
              job.attemptsMade + 1,
              controller,
              span,
              logger,
            );
            try {
              return await runJob(context, token, run);
            } finally {
              span.end();
            }
          },
        );
      } finally {
        // Also when a propagator or tracer throws: the run is not left counted as active.
        env.runs.end(controller);
        env.metrics.active(queue, -1);
        // Not awaited: a begin made for this run that it never took gives its lock back.
        void releaseUnclaimedBegin(env.redis, job.id)?.catch((err: unknown) => {
          logger().warn({ err: errorMessage(err) }, 'an unused instance lock was not released');
        });
        // One line per run (delayed re-queues included), with its wall-clock span: what the
        // concurrency tests read back from every process's log. Built only when it is written.
        if (env.logger.isLevelEnabled('debug')) {
          logger().debug({ startedAt, endedAt: run.endedAt ?? Date.now() }, 'job run');
        }
      }
    };
    return traced();
  };
}

async function runJob(
  context: RunContext,
  token: string | undefined,
  times: RunTimes,
): Promise<JobReturn> {
  const { services: env, job, queue, attempt, span } = context;
  const started = performance.now();
  const jobKey = `${env.prefix}:${job.queueName}:${job.id ?? ''}`;
  // `completes`: the run returns the result, and BullMQ's completion of the job writes it with
  // the lock's release (completion.ts); otherwise (a failure, a retry) they are written here.
  const report = async (
    outcome: JobResult['outcome'],
    fields: ResultFields,
    lease?: Lease,
    completes = false,
  ): Promise<JobReturn> => {
    const result: JobResult = {
      jobId: job.id ?? '',
      op: job.name as JobName,
      outcome,
      attempt,
      timestamp: Date.now(),
      ...fields,
      instanceId: fields.instanceId ?? instanceOf(job.data),
      traceContext: currentTraceContext() ?? producerTraceContext(job.data),
    };
    if (completes)
      endWithCompletion(job, resultEnding(env.prefix, result, jobKey, lease?.detach()));
    else await appendRunResult(env.redis, env.prefix, result, jobKey, lease?.detach(), token);
    env.metrics.outcome(queue, opLabel(job.name), outcome, (performance.now() - started) / 1000);
    span.setAttribute('kvm2.outcome', outcome);
    return result;
  };

  // Started more often than attempted: a run of an attempt started before (a stall, a delayed
  // re-queue). If that attempt already wrote its final result (its worker died, or lost Redis,
  // before BullMQ heard), it is not run again: run again it could fail where it had succeeded,
  // and the retry that followed would write a second final result. It ends with that one.
  if (job.attemptsStarted > job.attemptsMade + 1) {
    const ended = await finalOfAttempt(env.redis, env.prefix, jobKey, attempt);
    if (ended !== undefined) {
      context.logger.info(
        { outcome: ended.outcome, streamId: ended.streamId },
        'attempt already ended: its final result stands',
      );
      if (ended.outcome === 'failed') throw new UnrecoverableError(ended.message ?? 'failed');
      const { streamId: _streamId, ...result } = ended;
      return result;
    }
  }

  let step: Step;
  try {
    step = await dispatch(context);
  } catch (err) {
    step = await onError(context, err, report);
  }
  if (step.type === 'delay') {
    env.metrics.delayed(queue, step.reason);
    times.endedAt = Date.now();
    await job.moveToDelayed(Date.now() + step.ms, token);
    throw new DelayedError();
  }
  return await report(step.outcome, step.fields, step.lease, true);
}

/** Validates the data once, as the job's name says, and hands the run to its processor. */
async function dispatch(context: RunContext): Promise<Step> {
  const { job, queue } = context;
  const host = hostOfQueue(queue);
  const name = job.name;
  if (host !== undefined) {
    if (name === 'create') {
      return await processCreate(jobRun(context, name, validateJob(name, job.data)), host);
    }
    if (name === 'delete') {
      return await processDelete(jobRun(context, name, validateJob(name, job.data)), host);
    }
    if (name === 'get')
      return await processGet(jobRun(context, name, validateJob(name, job.data)), host);
  } else if (name === 'gc') {
    return await processGc(jobRun(context, name, validateJob(name, job.data)));
  } else if (name === 'health') {
    return await processHealth(jobRun(context, name, validateJob(name, job.data)));
  }
  // validateJob names the unknown job; a known job on the wrong queue is refused here.
  validateJob(name, job.data);
  throw new Kvm2Error('ERR_INVALID_JOB', `job: '${name}' jobs do not belong on queue '${queue}'`);
}

/**
 * An error becomes: a delay (busy key; a cancelled job at shutdown), a success (delete of a
 * missing instance), or a result and a rethrow that BullMQ understands.
 */
async function onError(
  context: RunContext,
  err: unknown,
  report: (outcome: JobResult['outcome'], fields: ResultFields) => Promise<JobReturn>,
): Promise<Step> {
  const { services: env, job, signal, span, attempt } = context;
  if (err instanceof KeyBusyError) return busyDelay(Date.now() - job.timestamp);
  if (signal.aborted && env.releasing()) return delay(0, 'shutdown');
  if (err instanceof UnrecoverableError) {
    await report('failed', { errorKind: 'permanent', message: err.message });
    throw err;
  }
  const kind = classifyError(err);
  const host = hostOfQueue(context.queue);
  // The host is away: its queue pauses here, so its other jobs wait untaken (host-breaker.ts).
  if (host !== undefined && kind === 'transient') env.breakers?.failed(host, err);
  const message = errorMessage(err);
  const code = errorCode(err);
  span.recordException({ name: code ?? 'Error', message });
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  if (job.name === 'delete' && kind === 'not_found') {
    return { type: 'result', outcome: 'succeeded', fields: { state: 'deleted', message } };
  }
  const attempts = job.opts.attempts ?? 1;
  const final = kind !== 'transient' || attempt >= attempts;
  await report(final ? 'failed' : 'retrying', {
    errorKind: kind,
    ...(code === undefined ? {} : { errorCode: code }),
    message,
  });
  context.logger.warn({ kind, code, attempt, attempts, final }, message);
  if (kind !== 'transient') throw new UnrecoverableError(message);
  throw err instanceof Error ? err : new Error(message);
}
