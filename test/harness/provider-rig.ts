// What the provider tests run against: the real libvirtd through the harness's sshd, an
// isolated network, a tiny qcow2 served by a real HTTP server on port 0 under an image name of
// the run's own, a Provider over them, and telemetry kept in memory. stop() deletes the
// instances named through instanceName() and the base images the run filled.
import { afterAll, beforeAll } from 'vitest';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import type { TracerProvider, InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import { parseConfig } from '../../src/provider/config/load.js';
import { Provider } from '../../src/provider/provider.js';
import { startImageServer, type ImageServer } from './image-server.js';
import {
  isolatedNetwork,
  poolBases,
  removeBasesSince,
  type TestNetwork,
} from './libvirt-objects.js';
import { startSshd, type Sshd } from './sshd.js';
import { memoryLogger, memoryTracing } from './telemetry.js';
import { testHost } from './test-host.js';
import { uniqueName } from './virsh.js';

const run = promisify(execFile);

/** Written into user-data by the tests: no span, log line or error may carry it. */
export const SENTINEL = 'kvm2-secret-sentinel-7f3a9c';

export interface ProviderSetup {
  readonly sshd: Sshd;
  /** Serves the tiny image at /tiny.qcow2. */
  readonly images: ImageServer;
  readonly net: TestNetwork;
  /** A temporary directory holding tiny.qcow2; removed by stop(). */
  readonly dir: string;
  /** On host h1 (the harness's sshd and the network), the image under imageTag. */
  readonly provider: Provider;
}

export interface ProviderRig {
  readonly exporter: InMemorySpanExporter;
  readonly tracerProvider: TracerProvider;
  readonly logger: Logger;
  /** The providers' log lines (level debug and up), parsed. */
  readonly logLines: Record<string, unknown>[];
  /** The image's name in the config. */
  readonly imageTag: string;
  /** A new instance name, deleted on h1 by stop(). */
  instanceName: () => string;
  start: () => Promise<ProviderSetup>;
  /** Undoes start() and what the tests made, the global context manager included. */
  stop: () => Promise<void>;
}

export function providerRig(): ProviderRig {
  let sshd: Sshd | undefined;
  let images: ImageServer | undefined;
  let net: TestNetwork | undefined;
  let dir: string | undefined;
  let provider: Provider | undefined;
  const { exporter, tracerProvider } = memoryTracing('test');
  const { logger, lines: logLines } = memoryLogger('debug');
  const names: string[] = [];
  const imageTag = uniqueName('img').replace(/[^a-z0-9-]/g, '');
  let basesBefore: string[] = [];

  function instanceName(): string {
    const n = uniqueName('kvm2-pv')
      .replace(/[^a-z0-9-]/g, '')
      .slice(0, 40);
    names.push(n);
    return n;
  }

  return {
    exporter,
    tracerProvider,
    logger,
    logLines,
    imageTag,
    instanceName,
    async start() {
      basesBefore = await poolBases();
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-provider-'));
      const image = path.join(dir, 'tiny.qcow2');
      await run('qemu-img', ['create', '-q', '-f', 'qcow2', image, '64M']);
      sshd = await startSshd();
      images = await startImageServer();
      images.serve('/tiny.qcow2', { file: image });
      net = await isolatedNetwork('kvm2-pvnet');
      const config = parseConfig({
        hosts: [testHost(sshd, net.name)],
        images: { [imageTag]: { url: images.url('/tiny.qcow2'), format: 'qcow2' } },
        defaults: { vcpus: 1, memoryMiB: 128, diskGiB: 1 },
      });
      provider = new Provider(config, { logger, tracer: tracerProvider.getTracer('test') });
      return { sshd, images, net, dir, provider };
    },
    async stop() {
      const p = provider;
      if (p !== undefined) {
        await Promise.all(names.map((n) => p.delete(`h1/${n}`).catch(() => undefined)));
      }
      await provider?.close();
      await removeBasesSince(basesBefore);
      await net?.remove();
      await images?.close();
      await sshd?.stop();
      if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
      context.disable();
    },
  };
}

/** Registers a test file's hooks for `rig`: started before its tests (`onStart` takes what start() made), stopped after. */
export function providerHooks(rig: ProviderRig, onStart: (setup: ProviderSetup) => void): void {
  beforeAll(async () => onStart(await rig.start()), 60_000);
  afterAll(() => rig.stop());
}
