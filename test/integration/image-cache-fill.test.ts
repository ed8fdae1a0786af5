// A fill of the image cache (SPEC §5) against the real libvirtd, reached through the harness's
// sshd, with images served by a real HTTP server on port 0: base and marker, the bytes, the
// qcow2 format as libvirt and qemu-img read it, an overlay on the base, the cache hit, a 64 MiB
// upload while the download runs, and one download for two ensures. virsh and the files on disk
// are the witnesses.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseVolumeName, markerVolumeName } from '../../src/provider/image/base-image.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import { buildVolumeXml } from '../../src/provider/xml/volume.js';
import {
  allocated,
  HOST,
  imageCacheRig,
  MiB,
  POOL,
  poolVolumes,
  precheckBytes,
  removeVolume,
  sha256File,
} from '../harness/image-cache-rig.js';
import { virsh } from '../harness/virsh.js';

const execFileAsync = promisify(execFile);

const rig = imageCacheRig();
const { configOf, exporter, extraVolumes, provider, run, serve, served, stats, tracer } = rig;
let workDir = '';
let poolPath = '';

beforeAll(async () => {
  ({ workDir, poolPath } = await rig.start());
});

afterAll(() => rig.stop());

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

    // The marker is the fill's last act (docs/image-cache.md, step 8): every other call of the
    // fill, the base's path and size included, is made (and awaited) before the marker's volume
    // is, so nothing that fails after it can have the fill remove a base it vouched for.
    const ns = ([sec, nsec]: readonly [number, number]): bigint =>
      BigInt(sec) * 10n ** 9n + BigInt(nsec);
    const calls = spans
      .filter((c) => c.parentSpanContext?.spanId === download?.spanContext().spanId)
      .sort((a, b) => Number(ns(a.startTime) - ns(b.startTime)));
    const marker = calls.filter((c) => c.name === 'kvm2.StorageVolCreateXML').at(-1);
    expect(marker).toBeDefined();
    const later = calls.filter((c) => ns(c.startTime) > ns(marker!.startTime));
    // Its upload, and the fill's own link closed once it is done.
    expect(later.map((c) => c.name)).toEqual(['kvm2.StorageVolUpload', 'kvm2.ConnectClose']);
    expect(calls.map((c) => c.name)).toEqual(
      expect.arrayContaining(['kvm2.StorageVolGetPath', 'kvm2.StorageVolGetInfo']),
    );
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
    // A hit has no fill, so no precheck: nothing for the pool to take.
    expect(await precheckBytes(provider(), HOST, 'imgtest-small')).toBeUndefined();
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
