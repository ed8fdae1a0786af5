// The worker process (`kvm2 worker`, `npm start`): telemetry, the runtime, its endpoints, and
// the signals. SIGTERM or SIGINT stops taking jobs and lets active ones finish within
// `worker.shutdownTimeout`, then releases the rest to their queues; a second signal cancels
// and releases at once; a third exits at once, whatever is left (BullMQ's stalled-job check
// gives an abandoned job to another worker).
import type { Logger } from 'pino';
import type { Kvm2Config } from '../src/provider/config/schema.js';
import { serveEndpoints } from './endpoints.js';
import { createLogger } from './logger.js';
import { startTelemetry } from './telemetry.js';
import { startWorker } from './runtime.js';

export interface RunWorkerOptions {
  readonly hosts?: readonly string[] | undefined;
  readonly logger?: Logger | undefined;
}

export async function runWorker(config: Kvm2Config, options: RunWorkerOptions = {}): Promise<void> {
  const logger = options.logger ?? createLogger({ name: 'kvm2-worker' });
  const telemetry = startTelemetry('kvm2-worker');
  const runtime = await startWorker(config, { hosts: options.hosts, logger });
  let endpoints: Awaited<ReturnType<typeof serveEndpoints>>;
  try {
    endpoints = await serveEndpoints(runtime, config.worker.listen);
  } catch (err) {
    // The workers took jobs as soon as they started: they are released, not abandoned.
    logger.error({ err: (err as Error).message }, 'endpoints could not start; stopping');
    await runtime.close({ force: true });
    await telemetry.shutdown().catch(() => undefined);
    throw err;
  }
  logger.info({ endpoints: endpoints.url, queues: runtime.queues }, 'worker ready');

  await new Promise<void>((resolve) => {
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
      runtime.close({ force }).then(resolve, (err: unknown) => {
        logger.error({ err: (err as Error).message }, 'shutdown failed');
        resolve();
      });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  await endpoints.close();
  await telemetry.shutdown().catch(() => undefined);
  logger.flush();
}
