// What the image cache tests (SPEC §5) run against: the real libvirtd through the harness's
// sshd, a provider context over it, and images served by a real HTTP server on port 0. Images
// are made at start() (qemu-img, random bytes), so every digest, and with it every volume name,
// belongs to this run; stop() removes them all, even after a failure.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { context, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import type { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { expect } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import type { ImageConfig } from '../../src/provider/config/schema.js';
import { createContext, type ProviderContext } from '../../src/provider/core/host-context.js';
import { baseVolumeName, markerVolumeName } from '../../src/provider/image/base-image.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import { startImageServer, type ImageRoute, type ImageServer } from './image-server.js';
import { startSshd, type Sshd } from './sshd.js';
import { memoryTracing } from './telemetry.js';
import { uniqueName, virsh } from './virsh.js';

const execFileAsync = promisify(execFile);
export const MiB = 1024 * 1024;
export const HOST = 'hv';
export const POOL = 'default';
/** The password in the URL of image `imgtest-missing`. */
export const SECRET = 's3cret-token';

interface Served {
  bytes?: Buffer;
  file?: string;
  sha256: string;
  size: number;
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  const handle = await fs.open(file);
  try {
    for await (const chunk of handle.createReadStream()) hash.update(chunk as Buffer);
  } finally {
    await handle.close();
  }
  return hash.digest('hex');
}

/** Volume names in the pool, as virsh lists them. */
export async function poolVolumes(): Promise<string[]> {
  const out = await virsh(['vol-list', POOL]);
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((name) => name !== '');
}

/** Resolves once the file has at least `bytes` allocated on disk (it starts sparse). */
export async function allocated(file: string, bytes: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const st = await fs.stat(file).catch(() => undefined);
    if (st !== undefined && st.blocks * 512 >= bytes) return;
    if (Date.now() > deadline) throw new Error(`${file} did not grow to ${bytes} bytes`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export async function failure(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await promise;
  } catch (err) {
    return err as Error & Record<string, unknown>;
  }
  throw new Error('expected a failure');
}

/**
 * The size a fill's pool-space precheck is given for `image` (HEAD, else a GET's headers, 0
 * when the server says neither), read through ensureBaseImage's own beforeFill and stopped
 * there, before anything is written; undefined for a cached base, which has no precheck.
 */
export async function precheckBytes(
  ctx: ProviderContext,
  host: string,
  image: string,
): Promise<number | undefined> {
  let seen: number | undefined;
  const stop = new Error('stopped at the precheck');
  try {
    await ensureBaseImage(ctx, host, image, {
      beforeFill: (bytes) => {
        seen = bytes;
        return Promise.reject(stop);
      },
    });
  } catch (err) {
    if (err !== stop) throw err;
  }
  return seen;
}

export async function removeVolume(name: string): Promise<void> {
  await virsh(['vol-delete', '--pool', POOL, name]).catch(() => undefined);
}

export interface ImageCacheSetup {
  readonly workDir: string;
  /** The pool's directory on this machine. */
  readonly poolPath: string;
}

export interface ImageCacheRig {
  readonly exporter: InMemorySpanExporter;
  readonly tracer: Tracer;
  /** This run's unique name: the images are served under /<run>/. */
  readonly run: string;
  /** Volumes a test made itself, removed by stop(). */
  readonly extraVolumes: string[];
  provider: () => ProviderContext;
  /** Image `imgtest-<name>` as configured. */
  configOf: (name: string) => ImageConfig;
  /** Replaces how /<run>/<name> is served. */
  serve: (name: string, route: ImageRoute) => void;
  stats: (name: string) => ReturnType<ImageServer['stats']>;
  /** What /<run>/<name> serves (its bytes or file), its digest and size. */
  served: (name: string) => Served;
  /** Neither the image's base nor its marker is in the pool, listed or as a file. */
  expectNothingLeft: (imageName: string) => Promise<void>;
  /** Sets the global context manager, starts sshd and the image server, makes the images. */
  start: () => Promise<ImageCacheSetup>;
  stop: () => Promise<void>;
}

export function imageCacheRig(): ImageCacheRig {
  const run = uniqueName('kvm2-imgtest');
  const { exporter, tracerProvider, tracer } = memoryTracing('image-cache-test');

  let sshd: Sshd | undefined;
  let server: ImageServer | undefined;
  let ctx: ProviderContext | undefined;
  let workDir = '';
  let poolPath = '';
  /** Configured images by name, and what each serves. */
  const images: Record<string, { url: string; sha256?: string; format: 'qcow2' | 'raw' }> = {};
  const data = new Map<string, Served>();
  const extraVolumes: string[] = [];

  function srv(): ImageServer {
    if (server === undefined) throw new Error('no image server');
    return server;
  }

  function provider(): ProviderContext {
    if (ctx === undefined) throw new Error('no provider context');
    return ctx;
  }

  function configOf(name: string): ImageConfig {
    const image = provider().config.images[name];
    if (image === undefined) throw new Error(`no image ${name}`);
    return image;
  }

  /** An image served at /<run>/<name>, configured under the name `imgtest-<name>`. */
  function addImage(
    name: string,
    bytes: Buffer,
    options: { format?: 'qcow2' | 'raw'; sha256?: string | null; credentials?: string } = {},
  ): void {
    const path = `/${run}/${name}`;
    const digest = sha256(bytes);
    const configured = options.sha256 === null ? undefined : (options.sha256 ?? digest);
    images[`imgtest-${name}`] = {
      url: srv().url(path, options.credentials),
      format: options.format ?? 'raw',
      ...(configured === undefined ? {} : { sha256: configured }),
    };
    data.set(name, { bytes, sha256: digest, size: bytes.length });
    srv().serve(path, { data: bytes });
  }

  function serve(name: string, route: ImageRoute): void {
    srv().serve(`/${run}/${name}`, route);
  }

  function stats(name: string): ReturnType<ImageServer['stats']> {
    return srv().stats(`/${run}/${name}`);
  }

  function served(name: string): Served {
    const d = data.get(name);
    if (d === undefined) throw new Error(`no data for ${name}`);
    return d;
  }

  async function expectNothingLeft(imageName: string): Promise<void> {
    const volumes = await poolVolumes();
    const image = configOf(imageName);
    expect(volumes).not.toContain(baseVolumeName(image));
    expect(volumes).not.toContain(markerVolumeName(image));
    // Nor as files libvirt has not listed.
    await expect(fs.stat(path.join(poolPath, baseVolumeName(image)))).rejects.toThrow(/ENOENT/);
  }

  return {
    exporter,
    tracer,
    run,
    extraVolumes,
    provider,
    configOf,
    serve,
    stats,
    served,
    expectNothingLeft,
    async start() {
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'kvm2-imgtest-'));
      [sshd, server] = await Promise.all([startSshd(), startImageServer()]);
      const poolXml = await virsh(['pool-dumpxml', POOL]);
      poolPath = /<path>([^<]+)<\/path>/.exec(poolXml)?.[1] ?? '';
      expect(poolPath).not.toBe('');

      // A real qcow2 holding 1 MiB of random data (a digest no other run shares).
      const raw = path.join(workDir, 'small.raw');
      const qcow2 = path.join(workDir, 'small.qcow2');
      await fs.writeFile(raw, randomBytes(MiB));
      await execFileAsync('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', raw, qcow2]);
      addImage('small', await fs.readFile(qcow2), { format: 'qcow2' });

      /** A qcow2 qemu-img makes with `options`, of a size no other run shares, served. */
      const qcow2Image = async (name: string, options: string[]): Promise<void> => {
        const file = path.join(workDir, `${name}.qcow2`);
        const size = `${1 + Math.floor(Math.random() * 1000)}M`;
        await execFileAsync('qemu-img', ['create', '-q', '-f', 'qcow2', ...options, file, size]);
        addImage(name, await fs.readFile(file), { format: 'qcow2', sha256: null });
      };
      // A qcow2 that names a backing file on the host.
      await qcow2Image('backed', ['-b', '/etc/hostname', '-F', 'raw']);
      // A qcow2 backed over the network (nbd://); -u: the backing is not opened (no server).
      await qcow2Image('nbd', ['-u', '-b', 'nbd://127.0.0.1:9', '-F', 'raw']);
      // A qcow2 whose data lives in an external file on the host (qcow2 v3's data_file): qemu
      // would read the guest's disk from that host file.
      const dataFile = path.join(workDir, 'external-data.raw');
      await qcow2Image('datafile', ['-o', `data_file=${dataFile},data_file_raw=on`]);

      // 64 MiB of random data in a file, never in the test's memory whole.
      const big = path.join(workDir, 'big.raw');
      const hash = createHash('sha256');
      const handle = await fs.open(big, 'w');
      for (let i = 0; i < 16; i++) {
        const part = randomBytes(4 * MiB);
        hash.update(part);
        await handle.write(part);
      }
      await handle.close();
      const bigDigest = hash.digest('hex');
      for (const [name, sha] of [
        ['big', bigDigest],
        ['cancelled', undefined],
      ] as const) {
        const p = `/${run}/${name}`;
        images[`imgtest-${name}`] = {
          url: srv().url(p),
          format: 'raw',
          ...(sha === undefined ? {} : { sha256: sha }),
        };
        data.set(name, { file: big, sha256: bigDigest, size: 64 * MiB });
        srv().serve(p, { file: big });
      }

      // Local files (`file:///…` or an absolute path): the qcow2 above, as a file of its own;
      // a missing one, a directory, an empty file, a wrong digest.
      const localQcow2 = path.join(workDir, 'local image.qcow2');
      await fs.copyFile(qcow2, localQcow2);
      await execFileAsync('qemu-img', ['resize', '-q', '-f', 'qcow2', localQcow2, '2M']);
      const localBytes = await fs.readFile(localQcow2);
      const files: [string, string, string | undefined][] = [
        ['file-small', localQcow2, sha256(localBytes)],
        ['file-url', pathToFileURL(localQcow2).href, sha256(localBytes)],
        ['file-missing', path.join(workDir, 'no-such.qcow2'), undefined],
        ['file-dir', workDir, undefined],
        ['file-empty', path.join(workDir, 'empty.qcow2'), undefined],
        ['file-mismatch', localQcow2, sha256(randomBytes(16))],
      ];
      await fs.writeFile(path.join(workDir, 'empty.qcow2'), '');
      for (const [name, url, digest] of files) {
        images[`imgtest-${name}`] = {
          url,
          format: 'qcow2',
          ...(digest === undefined ? {} : { sha256: digest }),
        };
      }
      data.set('file-small', {
        file: localQcow2,
        sha256: sha256(localBytes),
        size: localBytes.length,
      });

      addImage('mismatch', randomBytes(512 * 1024), { sha256: sha256(randomBytes(16)) });
      addImage('missing', randomBytes(1024), { credentials: `kvm2user:${SECRET}`, sha256: null });
      addImage('forbidden', randomBytes(1024));
      addImage('gone', randomBytes(1024));
      addImage('unavailable', randomBytes(1024));
      addImage('ratelimited', randomBytes(1024));
      addImage('empty', Buffer.alloc(0), { sha256: null });
      addImage('headless', randomBytes(8 * MiB));
      addImage('headok', randomBytes(300 * 1024));
      addImage('nolength', randomBytes(700 * 1024 + 17), { sha256: null });
      addImage('junkmarker', randomBytes(300 * 1024));
      addImage('nomarker', randomBytes(300 * 1024));
      addImage('debrisfirst', randomBytes(300 * 1024));
      addImage('lockloss', randomBytes(2 * MiB));
      addImage('twice', randomBytes(2 * MiB));
      addImage('notqcow2', randomBytes(256 * 1024), { format: 'qcow2', sha256: null });
      serve('missing', { status: 404 });
      serve('forbidden', { status: 403 });
      serve('gone', { status: 410 });
      serve('unavailable', { status: 503 });
      serve('ratelimited', { status: 429 });

      const config = parseConfig({
        hosts: [
          {
            name: HOST,
            uri: sshd.uri('/system'),
            pool: POOL,
            network: 'default',
            domainType: 'qemu',
          },
        ],
        images,
      });
      ctx = createContext(config, { tracer });
      return { workDir, poolPath };
    },
    async stop() {
      const names = Object.keys(images).flatMap((name) => {
        const image = ctx?.config.images[name];
        return image === undefined ? [] : [markerVolumeName(image), baseVolumeName(image)];
      });
      for (const name of [...extraVolumes, ...names]) await removeVolume(name);
      await ctx?.hosts.close();
      await server?.close();
      await sshd?.stop();
      if (workDir !== '') await fs.rm(workDir, { recursive: true, force: true });
      context.disable();
      await tracerProvider.shutdown();
    },
  };
}
