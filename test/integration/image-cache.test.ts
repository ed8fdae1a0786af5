// The image cache (SPEC §5) against the real libvirtd, reached through the harness's sshd, with
// images served by a real HTTP server on port 0. Images are made at test time (qemu-img, random
// bytes), so every digest, and with it every volume name, belongs to this run; afterAll removes
// them all, even after a failure. virsh and the files on disk are the witnesses.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/provider/config/load.js';
import type { ImageConfig } from '../../src/provider/config/schema.js';
import { createContext, type ProviderContext } from '../../src/provider/core/host-context.js';
import { baseVolumeName, markerVolumeName } from '../../src/provider/image/base-image.js';
import { ensureBaseImage, imagePendingBytes } from '../../src/provider/image/cache.js';
import { buildVolumeXml } from '../../src/provider/xml/volume.js';
import { startImageServer, type ImageRoute, type ImageServer } from '../harness/image-server.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh } from '../harness/virsh.js';
import { memoryTracing } from '../harness/telemetry.js';

const execFileAsync = promisify(execFile);
const MiB = 1024 * 1024;
const HOST = 'hv';
const POOL = 'default';
const run = uniqueName('kvm2-imgtest');
const SECRET = 's3cret-token';

const { exporter, tracerProvider, tracer } = memoryTracing('image-cache-test');

let sshd: Sshd | undefined;
let server: ImageServer | undefined;
let ctx: ProviderContext | undefined;
let workDir = '';
let poolPath = '';
/** Configured images by name, and what each serves. */
const images: Record<string, { url: string; sha256?: string; format: 'qcow2' | 'raw' }> = {};
const data = new Map<string, { bytes?: Buffer; file?: string; sha256: string; size: number }>();
const extraVolumes: string[] = [];

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  const handle = await fs.open(file);
  try {
    for await (const chunk of handle.createReadStream()) hash.update(chunk as Buffer);
  } finally {
    await handle.close();
  }
  return hash.digest('hex');
}

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

function served(name: string): { bytes?: Buffer; file?: string; sha256: string; size: number } {
  const d = data.get(name);
  if (d === undefined) throw new Error(`no data for ${name}`);
  return d;
}

async function poolVolumes(): Promise<string[]> {
  const out = await virsh(['vol-list', POOL]);
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((name) => name !== '');
}

async function expectNothingLeft(imageName: string): Promise<void> {
  const volumes = await poolVolumes();
  const image = configOf(imageName);
  expect(volumes).not.toContain(baseVolumeName(image));
  expect(volumes).not.toContain(markerVolumeName(image));
  // Nor as files libvirt has not listed.
  await expect(fs.stat(path.join(poolPath, baseVolumeName(image)))).rejects.toThrow(/ENOENT/);
}

/** Resolves once the file has at least `bytes` allocated on disk (it starts sparse). */
async function allocated(file: string, bytes: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const st = await fs.stat(file).catch(() => undefined);
    if (st !== undefined && st.blocks * 512 >= bytes) return;
    if (Date.now() > deadline) throw new Error(`${file} did not grow to ${bytes} bytes`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function failure(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await promise;
  } catch (err) {
    return err as Error & Record<string, unknown>;
  }
  throw new Error('expected a failure');
}

async function removeVolume(name: string): Promise<void> {
  await virsh(['vol-delete', '--pool', POOL, name]).catch(() => undefined);
}

beforeAll(async () => {
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

  // A qcow2 that names a backing file on the host.
  const backed = path.join(workDir, 'backed.qcow2');
  await execFileAsync('qemu-img', [
    'create',
    '-q',
    '-f',
    'qcow2',
    '-b',
    '/etc/hostname',
    '-F',
    'raw',
    backed,
    `${1 + Math.floor(Math.random() * 1000)}M`,
  ]);
  addImage('backed', await fs.readFile(backed), { format: 'qcow2', sha256: null });

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
});

afterAll(async () => {
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
});

describe('a fill', () => {
  it('creates base and marker, with the image bytes, seen by libvirt as qcow2', async () => {
    const small = served('small');
    const base = await tracer.startActiveSpan('test.create', async (span) => {
      try {
        return await ensureBaseImage(provider(), HOST, 'imgtest-small', {});
      } finally {
        span.end();
      }
    });
    const image = configOf('imgtest-small');
    expect(base).toEqual({
      volumeName: baseVolumeName(image),
      path: path.join(poolPath, baseVolumeName(image)),
      format: 'qcow2',
      sha256: small.sha256,
      capacityBytes: BigInt(MiB), // the qcow2's virtual size
    });
    expect(base.volumeName).toBe(`kvm2-base-${small.sha256}.qcow2`);
    expect(markerVolumeName(image)).toBe(`kvm2-base-${small.sha256}.qcow2.sha256`);
    const volumes = await poolVolumes();
    expect(volumes).toContain(base.volumeName);
    expect(volumes).toContain(markerVolumeName(image));
    expect(await sha256File(base.path)).toBe(small.sha256);
    expect(await fs.readFile(path.join(poolPath, markerVolumeName(image)), 'latin1')).toBe(
      small.sha256,
    );
    expect(stats('small').gets).toBe(1);

    // libvirt and qemu-img both read the base as qcow2.
    expect(await virsh(['vol-dumpxml', '--pool', POOL, base.volumeName])).toMatch(
      /<target>[\s\S]*<format type='qcow2'\/>/,
    );
    const info = JSON.parse(
      (await execFileAsync('qemu-img', ['info', '--output=json', base.path])).stdout,
    ) as { format: string; 'virtual-size': number };
    expect(info).toMatchObject({ format: 'qcow2', 'virtual-size': MiB });

    // The span nests under the caller's, the upload's call under the download.
    const spans = exporter.getFinishedSpans();
    const byName = (name: string) => spans.filter((s) => s.name === name);
    const parent = byName('test.create')[0];
    const download = byName('kvm2.download')[0];
    expect(download?.parentSpanContext?.spanId).toBe(parent?.spanContext().spanId);
    expect(download?.attributes).toMatchObject({
      'kvm2.host': HOST,
      'kvm2.image': 'imgtest-small',
      'server.address': '127.0.0.1',
      'kvm2.image.bytes': small.size,
    });
    const upload = byName('kvm2.StorageVolUpload')[0];
    expect(upload?.parentSpanContext?.spanId).toBe(download?.spanContext().spanId);
  });

  it('serves as the backing store of an overlay made with buildVolumeXml', async () => {
    const base = await ensureBaseImage(provider(), HOST, 'imgtest-small', {});
    const overlay = `${run}-overlay.qcow2`;
    extraVolumes.push(overlay);
    const xml = buildVolumeXml({
      name: overlay,
      capacityBytes: 64n * BigInt(MiB),
      format: 'qcow2',
      backingStore: { path: base.path, format: 'qcow2' },
    });
    const file = path.join(workDir, 'overlay.xml');
    await fs.writeFile(file, xml);
    await virsh(['vol-create', POOL, file]);
    const chain = JSON.parse(
      (
        await execFileAsync('qemu-img', [
          'info',
          '--output=json',
          '--backing-chain',
          path.join(poolPath, overlay),
        ])
      ).stdout,
    ) as Array<{ filename: string; format: string; 'backing-filename-format'?: string }>;
    expect(chain.map((layer) => [layer.filename, layer.format])).toEqual([
      [path.join(poolPath, overlay), 'qcow2'],
      [base.path, 'qcow2'],
    ]);
    expect(chain[0]?.['backing-filename-format']).toBe('qcow2');
    await removeVolume(overlay);
  });

  it('is a cache hit the second time: no request reaches the server', async () => {
    const before = { ...stats('small') };
    const base = await ensureBaseImage(provider(), HOST, 'imgtest-small', {});
    expect(base.sha256).toBe(served('small').sha256);
    expect(await imagePendingBytes(provider(), HOST, 'imgtest-small', {})).toBe(0);
    expect(stats('small').gets).toBe(before.gets);
    expect(stats('small').heads).toBe(before.heads);
  });

  it('uploads a 64 MiB image while it downloads: the server stalls until the volume grows', async () => {
    const image = configOf('imgtest-big');
    const file = path.join(poolPath, baseVolumeName(image));
    let sentWhenUploadSeen = -1;
    serve('big', {
      file: served('big').file!,
      stall: {
        afterBytes: 8 * MiB,
        // A client that buffered the body before uploading would never get here.
        until: async () => {
          await allocated(file, MiB);
          sentWhenUploadSeen = stats('big').bytesSent;
        },
      },
    });
    const base = await ensureBaseImage(provider(), HOST, 'imgtest-big', {});
    expect(stats('big').stallsReleased).toBe(1);
    expect(stats('big').stallsTimedOut).toBe(0);
    expect(sentWhenUploadSeen).toBeGreaterThan(0);
    expect(sentWhenUploadSeen).toBeLessThan(16 * MiB);
    expect(base.capacityBytes).toBe(BigInt(64 * MiB));
    expect((await fs.stat(base.path)).size).toBe(64 * MiB);
    expect(await sha256File(base.path)).toBe(served('big').sha256);
  });

  it('streams an image served without Content-Length, named from its URL', async () => {
    serve('nolength', { data: served('nolength').bytes!, omitLength: true });
    const image = configOf('imgtest-nolength');
    const base = await ensureBaseImage(provider(), HOST, 'imgtest-nolength', {});
    const urlDigest = createHash('sha256').update(image.url).digest('hex');
    expect(base.volumeName).toBe(`kvm2-base-${urlDigest}.raw`);
    expect(base.sha256).toBe(served('nolength').sha256);
    expect((await fs.stat(base.path)).size).toBe(served('nolength').size);
    expect(await sha256File(base.path)).toBe(served('nolength').sha256);
  });

  it('downloads once for two concurrent ensures of one host and image', async () => {
    serve('twice', { data: served('twice').bytes!, chunkDelayMs: 5 });
    const [a, b] = await Promise.all([
      ensureBaseImage(provider(), HOST, 'imgtest-twice', {}),
      ensureBaseImage(provider(), HOST, 'imgtest-twice', {}),
    ]);
    expect(a).toEqual(b);
    expect(stats('twice').gets).toBe(1);
    expect(await sha256File(a.path)).toBe(served('twice').sha256);
  });
});

describe('a failed fill leaves nothing in the pool', () => {
  it('sha256 mismatch: permanent', async () => {
    const err = await failure(ensureBaseImage(provider(), HOST, 'imgtest-mismatch', {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_DIGEST_MISMATCH', kind: 'permanent' });
    expect(err.message).toContain(served('mismatch').sha256);
    expect(stats('mismatch').completed).toBe(1); // it did get as far as the volume
    await expectNothingLeft('imgtest-mismatch');
  });

  it.each([
    ['missing', 404],
    ['forbidden', 403],
    ['gone', 410],
  ])('HTTP %s (%i): permanent', async (name, status) => {
    const err = await failure(ensureBaseImage(provider(), HOST, `imgtest-${name}`, {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'permanent' });
    expect(err.message).toContain(`imgtest-${name}`);
    expect(err.message).toContain('127.0.0.1');
    expect(err.message).toContain(String(status));
    await expectNothingLeft(`imgtest-${name}`);
  });

  it('credentials in the URL go as a header and appear in no message', async () => {
    const err = await failure(ensureBaseImage(provider(), HOST, 'imgtest-missing', {}));
    expect(err.message).not.toContain(SECRET);
    expect(err.message).not.toContain('kvm2user');
    expect(stats('missing').authorization).toBe(
      `Basic ${Buffer.from(`kvm2user:${SECRET}`).toString('base64')}`,
    );
  });

  it('Content-Length: 0: permanent, before any volume', async () => {
    const err = await failure(ensureBaseImage(provider(), HOST, 'imgtest-empty', {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_EMPTY', kind: 'permanent' });
    await expectNothingLeft('imgtest-empty');
    const probe = await failure(imagePendingBytes(provider(), HOST, 'imgtest-empty', {}));
    expect(probe).toMatchObject({ code: 'ERR_IMAGE_EMPTY', kind: 'permanent' });
  });

  it.each([
    ['unavailable', 503],
    ['ratelimited', 429],
  ])('HTTP %s (%i): transient', async (name, status) => {
    const err = await failure(ensureBaseImage(provider(), HOST, `imgtest-${name}`, {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'transient' });
    expect(err.message).toContain(String(status));
    await expectNothingLeft(`imgtest-${name}`);
  });

  it('bytes that are not qcow2 for a qcow2 image: permanent', async () => {
    const err = await failure(ensureBaseImage(provider(), HOST, 'imgtest-notqcow2', {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_CONTENT', kind: 'permanent' });
    expect(err.message).toMatch(/libvirt reads raw/);
    await expectNothingLeft('imgtest-notqcow2');
  });

  it('a qcow2 that names a backing file: permanent', async () => {
    const err = await failure(ensureBaseImage(provider(), HOST, 'imgtest-backed', {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_CONTENT', kind: 'permanent' });
    expect(err.message).toMatch(/backing file/);
    await expectNothingLeft('imgtest-backed');
  });

  it('a job cancelled mid-upload: transient, and the half-made volume is removed', async () => {
    const image = configOf('imgtest-cancelled');
    const file = path.join(poolPath, baseVolumeName(image));
    const job = new AbortController();
    serve('cancelled', {
      file: served('cancelled').file!,
      stall: {
        afterBytes: 4 * MiB,
        until: async () => {
          await allocated(file, MiB);
          job.abort(new Error('job cancelled'));
          await new Promise(() => undefined); // stays stalled until the client leaves
        },
        timeoutMs: 20_000,
      },
    });
    const err = await failure(
      ensureBaseImage(provider(), HOST, 'imgtest-cancelled', { signal: job.signal }),
    );
    expect(err).toMatchObject({ code: 'ERR_IMAGE_HTTP', kind: 'transient' });
    expect(err.message).toMatch(/imgtest-cancelled.*was cancelled/);
    await expectNothingLeft('imgtest-cancelled');
    await expect.poll(() => stats('cancelled').closedEarly).toBe(1);
    expect(stats('cancelled').stallsTimedOut).toBe(0);
  });
});

describe('debris', () => {
  async function makeVolume(name: string, content: Buffer): Promise<void> {
    extraVolumes.push(name);
    const file = path.join(workDir, `${name}.content`);
    await fs.writeFile(file, content);
    await virsh(['vol-create-as', POOL, name, String(content.length), '--format', 'raw']);
    await virsh(['vol-upload', '--pool', POOL, name, file]);
  }

  it('a marker that is not 64 hex characters is removed with its base, and both refilled', async () => {
    const image = configOf('imgtest-junkmarker');
    await makeVolume(markerVolumeName(image), Buffer.from('not a digest\n'));
    await makeVolume(baseVolumeName(image), randomBytes(4096));
    const base = await ensureBaseImage(provider(), HOST, 'imgtest-junkmarker', {});
    expect(stats('junkmarker').gets).toBe(1);
    expect(await sha256File(base.path)).toBe(served('junkmarker').sha256);
    expect(await fs.readFile(path.join(poolPath, markerVolumeName(image)), 'latin1')).toBe(
      served('junkmarker').sha256,
    );
  });

  it('a base without marker is removed and refilled', async () => {
    const image = configOf('imgtest-nomarker');
    await makeVolume(baseVolumeName(image), randomBytes(4096));
    expect(await imagePendingBytes(provider(), HOST, 'imgtest-nomarker', {})).toBe(
      served('nomarker').size,
    );
    const base = await ensureBaseImage(provider(), HOST, 'imgtest-nomarker', {});
    expect(stats('nomarker').gets).toBe(1);
    expect(await sha256File(base.path)).toBe(served('nomarker').sha256);
    expect(await poolVolumes()).toContain(markerVolumeName(image));
  });
});

describe('imagePendingBytes', () => {
  it('takes the size from HEAD when the server answers it', async () => {
    expect(await imagePendingBytes(provider(), HOST, 'imgtest-headok', {})).toBe(
      served('headok').size,
    );
    expect(stats('headok')).toMatchObject({ heads: 1, gets: 0 });
  });

  it('falls back to the headers of a GET when HEAD is refused, and leaves its body unread', async () => {
    serve('headless', {
      data: served('headless').bytes!,
      refuseHead: true,
      stall: { afterBytes: MiB, until: () => new Promise(() => undefined), timeoutMs: 10_000 },
    });
    expect(await imagePendingBytes(provider(), HOST, 'imgtest-headless', {})).toBe(8 * MiB);
    expect(stats('headless')).toMatchObject({ heads: 1, gets: 1 });
    await expect.poll(() => stats('headless').closedEarly).toBe(1);
    expect(stats('headless').bytesSent).toBeLessThanOrEqual(MiB);
    expect(stats('headless').completed).toBe(0);
    await expectNothingLeft('imgtest-headless');
  });
});
