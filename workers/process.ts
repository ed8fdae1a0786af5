// The worker process (`kvm2 worker`, `npm start`): telemetry, the endpoints, the signals and
// the runtime, in that order: the runtime's start waits for Redis for as long as Redis is away,
// and meanwhile /healthz answers, /readyz says 503 and a signal ends the start. SIGTERM, SIGINT
// or SIGHUP stops taking jobs and lets active ones finish within `worker.shutdownTimeout`, then
// releases the rest to their queues; a second signal cancels and releases at once; a third
// exits at once, whatever is left (BullMQ's stalled-job check gives an abandoned job to another
// worker).
import type { Logger } from 'pino';
import type { Kvm2Config } from '../src/provider/config/schema.js';
import { serveEndpoints, type Endpoints } from './endpoints.js';
import { createLogger } from './logger.js';
import { WorkerMetrics } from './run/metrics.js';
import { startTelemetry } from './telemetry.js';
import { startWorker, type WorkerRuntime } from './runtime.js';

/** How long the last spans get to reach the collector at exit. */
const TELEMETRY_FLUSH_MS = 3_000;

/** Waits for `work` at most `ms`; its failure is not the exit's. */
async function boundedShutdown(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}

export interface RunWorkerOptions {
  readonly hosts?: readonly string[] | undefined;
  readonly logger?: Logger | undefined;
}

export async function runWorker(config: Kvm2Config, options: RunWorkerOptions = {}): Promise<void> {
  const logger = options.logger ?? createLogger({ name: 'kvm2-worker' });
  const telemetry = startTelemetry('kvm2-worker');
  const metrics = new WorkerMetrics();
  let runtime: WorkerRuntime | undefined;
  // Fired by the first signal: it ends the start if one is under way, else the wait for it.
  const stop = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 2) {
      logger.warn({ signal }, 'third signal: exiting now');
      logger.flush();
      process.exit(1);
    }
    const force = signals > 1;
    logger.info({ signal, force }, force ? 'second signal: forcing shutdown' : 'shutting down');
    stop.abort(new Error(`${signal} during the start`));
    // The close under way ends its graceful wait; its failure is reported where it is awaited.
    if (force) runtime?.close({ force }).catch(() => undefined);
  };
  // SIGHUP too: a worker run from a terminal that closes (an SSH session that ends) drains like
  // one stopped by its supervisor, instead of Node's default, an exit with no drain.
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('SIGHUP', onSignal);

  let endpoints: Endpoints | undefined;
  try {
    try {
      const source = { metrics, ready: () => runtime?.ready() ?? false };
      endpoints = await serveEndpoints(source, config.worker.listen);
    } catch (err) {
      logger.error({ err: (err as Error).message }, 'endpoints could not start; stopping');
      throw err;
    }
    logger.info({ endpoints: endpoints.url }, 'endpoints listening');
    try {
      runtime = await startWorker(config, {
        hosts: options.hosts,
        logger,
        metrics,
        signal: stop.signal,
      });
    } catch (err) {
      if (stop.signal.aborted) return; // a signal ended the start: nothing was left running
      throw err;
    }
    if (!stop.signal.aborted) {
      logger.info({ endpoints: endpoints.url, queues: runtime.queues }, 'worker ready');
      await new Promise((resolve) =>
        stop.signal.addEventListener('abort', resolve, { once: true }),
      );
    }
    await runtime.close({ force: signals > 1 }).catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'shutdown failed');
    });
  } finally {
    // The runtime's close says it; a process that never had one says it here.
    if (runtime === undefined) logger.info('worker stopped');
    await endpoints?.close();
    // An OTLP collector that does not answer would hold the exit for the exporter's own
    // timeout (10 s): past a supervisor's grace period, and the kill would lose the logs too.
    await boundedShutdown(telemetry.shutdown(), TELEMETRY_FLUSH_MS);
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    process.off('SIGHUP', onSignal);
    logger.flush();
  }
}
