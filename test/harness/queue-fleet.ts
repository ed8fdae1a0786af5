// The parts a queue test runs against: the machine's libvirtd through a private sshd, an
// isolated network, a real HTTP server with a tiny qcow2 image (its domains start and run the
// firmware; no guest boots, so creates ask not to wait for an address), a fresh Redis prefix,
// and a config file for worker processes. cleanup() removes every domain and volume whose name
// starts with the fleet's name prefix, the base image its image filled, and the rest.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kvm2Client } from '../../queues/client.js';
import { parseConfig } from '../../src/provider/config/load.js';
import type { Kvm2Config } from '../../src/provider/config/schema.js';
import { startImageServer, type ImageServer } from './image-server.js';
import { isolatedNetwork, poolVolumes, type TestNetwork } from './libvirt-objects.js';
import { redisScope, type RedisScope } from './redis.js';
import { startSshd, type Sshd } from './sshd.js';
import { testHost } from './test-host.js';
import { tinyImage } from './tiny-image.js';
import { virsh } from './virsh.js';

export interface QueueFleet {
  readonly sshd: Sshd;
  readonly net: TestNetwork;
  readonly images: ImageServer;
  readonly scope: RedisScope;
  readonly dir: string;
  /** Names of this fleet's instances start with it (`q<random>-`). */
  readonly namePrefix: string;
  /** The tiny image's name in the config. */
  readonly image: string;
  /** The config as an object (before validation), with `overrides` merged at the top. */
  configObject(overrides?: Record<string, unknown>): Record<string, unknown>;
  config(overrides?: Record<string, unknown>): Kvm2Config;
  /** Writes the config (YAML is JSON) to a file and returns its path. */
  writeConfig(overrides?: Record<string, unknown>): string;
  client(overrides?: Record<string, unknown>): Kvm2Client;
  name(suffix: string): string;
  /** This fleet's domain names on the machine. */
  domains(): Promise<string[]>;
  /** This fleet's volumes in pool default. */
  volumes(): Promise<string[]>;
  cleanup(): Promise<void>;
}

/** The guests' size and the worker's settings of the queue tests: small, and short timeouts. */
export const TEST_DEFAULTS = { vcpus: 1, memoryMiB: 128, diskGiB: 1, addressTimeout: '30s' };
export const TEST_WORKER = {
  listen: '127.0.0.1:0',
  shutdownTimeout: '10s',
  lockTtl: '3s',
  stalledAfter: '3s',
  addressPoll: '500ms',
};

export async function startQueueFleet(label: string): Promise<QueueFleet> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kvm2-${label}-`));
  const { path: image, sha256 } = await tinyImage(dir);
  const sshd = await startSshd();
  const net = await isolatedNetwork(`kvm2-${label}`);
  const images = await startImageServer();
  images.serve('/tiny.qcow2', { file: image });
  const scope = await redisScope(label);
  const namePrefix = `q${Math.random().toString(36).slice(2, 8)}-`;
  const imageName = 'tiny';

  const configObject = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
    redis: { url: scope.url, prefix: scope.prefix },
    hosts: [testHost(sshd, net.name, { concurrency: 2 })],
    images: { [imageName]: { url: images.url('/tiny.qcow2'), sha256, format: 'qcow2' } },
    defaults: TEST_DEFAULTS,
    health: { every: '60s', timeout: '10s' },
    worker: TEST_WORKER,
    ...overrides,
  });
  const domains = async (): Promise<string[]> =>
    (await virsh(['list', '--all', '--name']))
      .split('\n')
      .map((s) => s.trim())
      .filter((n) => n.startsWith(namePrefix));
  const volumes = async (): Promise<string[]> =>
    (await poolVolumes()).filter((v) => v.startsWith(`kvm2-${namePrefix}`));

  return {
    sshd,
    net,
    images,
    scope,
    dir,
    namePrefix,
    image: imageName,
    configObject,
    config: (overrides) => parseConfig(configObject(overrides)),
    writeConfig(overrides) {
      const file = path.join(dir, `config-${Math.random().toString(36).slice(2, 8)}.yaml`);
      fs.writeFileSync(file, JSON.stringify(configObject(overrides), null, 2));
      return file;
    },
    client: (overrides) => Kvm2Client.fromConfig(parseConfig(configObject(overrides))),
    name: (suffix) => `${namePrefix}${suffix}`,
    domains,
    volumes,
    async cleanup() {
      // All at once: qemu under TCG takes about 1.8 s to exit on libvirt's SIGTERM here.
      await Promise.all(
        (await domains().catch(() => [])).map(async (name) => {
          await virsh(['destroy', name]).catch(() => undefined);
          await virsh(['undefine', '--nvram', name]).catch(() => undefined);
        }),
      );
      for (const vol of await volumes().catch(() => [])) {
        await virsh(['vol-delete', '--pool', 'default', vol]).catch(() => undefined);
      }
      // The tiny image's base (and marker), named by its digest.
      for (const vol of [`kvm2-base-${sha256}.qcow2`, `kvm2-base-${sha256}.qcow2.sha256`]) {
        await virsh(['vol-delete', '--pool', 'default', vol]).catch(() => undefined);
      }
      await net.remove();
      await images.close();
      await sshd.stop();
      await scope.cleanup();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
