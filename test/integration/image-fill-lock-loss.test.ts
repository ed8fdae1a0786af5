// A fill whose lock is lost in the middle (docs/image-cache.md): its process was frozen past the
// TTL, or Redis lost the key, and another worker may hold the lock now, removing this fill's
// partial base as debris and filling a base of the same name. The fill that lost its lock must
// then touch nothing: a cleanup by name would delete the new holder's volume. The real libvirtd
// through the harness's sshd, a real HTTP server whose body stalls, real Redis locks.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createContext, type ProviderContext } from '../../src/provider/core/host-context.js';
import { baseVolumeName } from '../../src/provider/image/base-image.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import { RedisLocks } from '../../workers/locks/redis-locks.js';
import { waitUntil } from '../harness/fault-kit.js';
import { failure, HOST, imageCacheRig, MiB, poolVolumes } from '../harness/image-cache-rig.js';
import { REDIS_URL } from '../harness/redis.js';

const rig = imageCacheRig();
const prefix = `kvm2test:${randomBytes(6).toString('hex')}`;
let redis: Redis;
let ctx: ProviderContext;

beforeAll(async () => {
  await rig.start();
  redis = new Redis(REDIS_URL);
  const locks = new RedisLocks({ client: redis, prefix, ttlMs: 1_000 });
  ctx = createContext(rig.provider().config, { locks });
});

afterAll(async () => {
  await ctx?.hosts.close();
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis?.quit();
  await rig.stop();
});

it('a fill that loses its lock leaves the base for the next holder, removing nothing', async () => {
  const image = rig.configOf('imgtest-lockloss');
  const base = baseVolumeName(image);
  rig.extraVolumes.push(base);
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  rig.serve('lockloss', {
    data: rig.served('lockloss').bytes!,
    stall: { afterBytes: MiB, until: () => released, timeoutMs: 30_000 },
  });
  const filling = failure(ensureBaseImage(ctx, HOST, 'imgtest-lockloss', {}));
  try {
    await waitUntil(async () => (await poolVolumes()).includes(base), 15_000, 'the base volume');
    await waitUntil(() => rig.stats('lockloss').bytesSent >= MiB, 15_000, 'the first MiB');
    // Another worker holds the image's fill lock now (this one's lapsed while it was frozen).
    const lockKey = `${prefix}:lock:image:${HOST}:${base}`;
    expect(await redis.exists(lockKey)).toBe(1);
    await redis.set(lockKey, 'another-worker', 'PX', 60_000);
    const err = await filling;
    expect(err).toMatchObject({ code: 'ERR_LOCK_LOST' });
    // Debris for whoever holds the lock: what it finds under this name may be its own already.
    expect(await poolVolumes()).toContain(base);
  } finally {
    release();
  }
}, 60_000);
