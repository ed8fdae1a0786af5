// The bytes an image fill may write (docs/security.md, item 3), against the real libvirtd through
// sshd and a real HTTP server: a body without Content-Length that would go on and on is stopped
// at the image's maxSize, and at the pool's free space less the host's poolReserve, with nothing
// left in the pool; a Content-Length over the cap is refused before any volume is made.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kvm2Error } from '../../src/errors/error.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { createContext, type ProviderContext } from '../../src/provider/core/host-context.js';
import { baseVolumeName, markerVolumeName } from '../../src/provider/image/base-image.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import { failure, MiB, POOL, poolVolumes, removeVolume } from '../harness/image-cache-rig.js';
import { startImageServer, type ImageServer } from '../harness/image-server.js';
import { startSshd, type Sshd } from '../harness/sshd.js';
import { uniqueName, virsh } from '../harness/virsh.js';

const HOST = 'cap';
const MAX_SIZE = 8 * MiB;
/** What each route serves: far more than the cap, so only the cap can stop it. */
const BODY = randomBytes(48 * MiB);

let sshd: Sshd;
let server: ImageServer;
const run = uniqueName('kvm2-cap');
const contexts: ProviderContext[] = [];

/** A provider whose host leaves `poolReserve` free, with images served under /<run>/. */
function providerWith(poolReserve: number | string): ProviderContext {
  const image = (name: string, extra: Record<string, unknown> = {}) => ({
    url: server.url(`/${run}/${name}`),
    format: 'raw',
    maxSize: `${MAX_SIZE}`,
    ...extra,
  });
  const ctx = createContext(
    parseConfig({
      hosts: [
        { name: HOST, uri: sshd.uri('/system'), pool: POOL, network: 'default', poolReserve },
      ],
      images: {
        endless: image('endless'),
        said: image('said'),
        // No sha256: each base is named by its URL, so each image has its own.
        roomy: image('roomy', { maxSize: '1GiB' }),
      },
    }),
  );
  contexts.push(ctx);
  return ctx;
}

async function expectNothingLeft(ctx: ProviderContext, name: string): Promise<void> {
  const image = ctx.config.images[name];
  if (image === undefined) throw new Error(`no image ${name}`);
  const volumes = await poolVolumes();
  expect(volumes).not.toContain(baseVolumeName(image));
  expect(volumes).not.toContain(markerVolumeName(image));
}

/** Bytes free in the pool now, as libvirt counts them. */
async function poolAvailable(): Promise<number> {
  const info = await virsh(['pool-info', '--bytes', POOL]);
  return Number(/Available:\s+(\d+)/.exec(info)?.[1]);
}

beforeAll(async () => {
  [sshd, server] = await Promise.all([startSshd(), startImageServer()]);
  server.serve(`/${run}/endless`, { data: BODY, omitLength: true, chunkBytes: 256 * 1024 });
  server.serve(`/${run}/said`, { data: BODY });
  server.serve(`/${run}/roomy`, { data: BODY, omitLength: true, chunkBytes: 256 * 1024 });
});

afterAll(async () => {
  for (const ctx of contexts) {
    for (const image of Object.values(ctx.config.images)) {
      await removeVolume(baseVolumeName(image));
      await removeVolume(markerVolumeName(image));
    }
    await ctx.hosts.close();
  }
  await server?.close();
  await sshd?.stop();
});

describe('the bytes a fill may write', () => {
  it('stops a body without Content-Length at maxSize: permanent, nothing left', async () => {
    const ctx = providerWith('1MiB');
    const err = await failure(ensureBaseImage(ctx, HOST, 'endless', {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_TOO_LARGE', kind: 'permanent' });
    expect(err.message).toContain(`over its maxSize of ${MAX_SIZE}`);
    expect(err.message).toContain('kvm2.images.endless.maxSize');
    await expectNothingLeft(ctx, 'endless');
    // The server was cut off near the cap, not read to its end.
    const stats = server.stats(`/${run}/endless`);
    expect(stats.completed).toBe(0);
    expect(stats.bytesSent).toBeLessThan(MAX_SIZE + 8 * MiB);
  }, 60_000);

  it('refuses a Content-Length over maxSize before any volume is made', async () => {
    const ctx = providerWith('1MiB');
    const before = await poolVolumes();
    const err = await failure(ensureBaseImage(ctx, HOST, 'said', {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_TOO_LARGE', kind: 'permanent' });
    expect(err.message).toContain(`says it has ${BODY.length} bytes`);
    expect(await poolVolumes()).toEqual(before);
    expect(server.stats(`/${run}/said`).bytesSent).toBeLessThan(BODY.length);
  }, 60_000);

  it('an image over maxSize is refused as such even when the pool is short of space too', async () => {
    // Permanent whatever the pool holds: ERR_POOL_FULL (quota_exceeded) would say that freeing
    // space helps. The create's pool-space precheck is not asked.
    const ctx = providerWith('1MiB');
    let asked = false;
    const err = await failure(
      ensureBaseImage(ctx, HOST, 'said', {
        beforeFill: () => {
          asked = true;
          return Promise.reject(new Kvm2Error('ERR_POOL_FULL', 'the pool is short'));
        },
      }),
    );
    expect(err).toMatchObject({ code: 'ERR_IMAGE_TOO_LARGE', kind: 'permanent' });
    expect(err.message).toContain(`says it has ${BODY.length} bytes, over its maxSize`);
    expect(asked).toBe(false);
  }, 60_000);

  it("stops at the pool's free space less the reserve: quota_exceeded, nothing left", async () => {
    // A reserve that leaves 4 MiB of the pool to this fill (pool-info counts in the same units).
    const reserve = (await poolAvailable()) - 4 * MiB;
    const ctx = providerWith(reserve);
    const err = await failure(ensureBaseImage(ctx, HOST, 'roomy', {}));
    expect(err).toMatchObject({ code: 'ERR_POOL_FULL', kind: 'quota_exceeded' });
    expect(err.message).toContain(`of which ${reserve} stay in reserve`);
    await expectNothingLeft(ctx, 'roomy');
  }, 60_000);
});
