// A fleet of several real libvirt hosts for the queue tests (issue #15): N namespace hosts
// (harness/ns-host.ts), each reached through its own sshd, one image served over HTTP, a Redis
// key prefix of the fleet's own, and the configuration that names them all. Like
// harness/queue-fleet.ts, which has one host (the machine's own libvirtd).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kvm2Client } from '../../queues/client.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { startImageServer, type ImageServer } from './image-server.js';
import { startNamespaceHosts, type NamespaceHost } from './ns-host.js';
import { TEST_DEFAULTS, TEST_WORKER } from './queue-fleet.js';
import { redisScope, type RedisScope } from './redis.js';
import { tinyImage } from './tiny-image.js';

export interface HostFleet {
  readonly hosts: readonly NamespaceHost[];
  readonly images: ImageServer;
  readonly scope: RedisScope;
  readonly dir: string;
  /** The configured image's name. */
  readonly image: string;
  /** The configuration as an object; `hostExtras[name]` is merged into that host's entry. */
  configObject(
    overrides?: Record<string, unknown>,
    hostExtras?: Readonly<Record<string, Record<string, unknown>>>,
  ): Record<string, unknown>;
  writeConfig(
    overrides?: Record<string, unknown>,
    hostExtras?: Readonly<Record<string, Record<string, unknown>>>,
  ): string;
  client(
    overrides?: Record<string, unknown>,
    hostExtras?: Readonly<Record<string, Record<string, unknown>>>,
  ): Kvm2Client;
  host(name: string): NamespaceHost;
  cleanup(): Promise<void>;
}

export async function startHostFleet(
  label: string,
  count: number,
  hostDefaults: Readonly<Record<string, Record<string, unknown>>> = {},
): Promise<HostFleet> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kvm2-${label}-`));
  const { path: imagePath, sha256 } = await tinyImage(dir);
  const hosts = await startNamespaceHosts(count, label);
  const images = await startImageServer();
  images.serve('/tiny.qcow2', { file: imagePath });
  const scope = await redisScope(label);

  const configObject: HostFleet['configObject'] = (overrides = {}, hostExtras = {}) => ({
    redis: { url: scope.url, prefix: scope.prefix },
    hosts: hosts.map((h) =>
      h.hostConfig({ concurrency: 2, ...hostDefaults[h.name], ...hostExtras[h.name] }),
    ),
    images: { tiny: { url: images.url('/tiny.qcow2'), sha256, format: 'qcow2' } },
    defaults: TEST_DEFAULTS,
    health: { every: '2s', timeout: '2s' },
    worker: TEST_WORKER,
    ...overrides,
  });
  return {
    hosts,
    images,
    scope,
    dir,
    image: 'tiny',
    configObject,
    writeConfig(overrides, hostExtras) {
      const file = path.join(dir, `config-${Math.random().toString(36).slice(2, 8)}.yaml`);
      fs.writeFileSync(file, JSON.stringify(configObject(overrides, hostExtras), null, 2));
      return file;
    },
    client: (overrides, hostExtras) =>
      Kvm2Client.fromConfig(parseConfig(configObject(overrides, hostExtras))),
    host(name) {
      const found = hosts.find((h) => h.name === name);
      if (found === undefined) throw new Error(`no host ${name} in this fleet`);
      return found;
    },
    async cleanup() {
      await Promise.all(hosts.map((h) => h.stop()));
      await images.close();
      await scope.cleanup();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
