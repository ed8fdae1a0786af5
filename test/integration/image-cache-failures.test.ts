// Failed fills of the image cache (SPEC §5) against the real libvirtd, reached through the
// harness's sshd, with images served by a real HTTP server on port 0: each failure's code and
// kind, no credentials in a message, and nothing left in the pool after it, a cancellation
// mid-upload included. virsh and the files on disk are the witnesses.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseVolumeName } from '../../src/provider/image/base-image.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import {
  allocated,
  failure,
  HOST,
  imageCacheRig,
  MiB,
  precheckBytes,
  SECRET,
} from '../harness/image-cache-rig.js';

const rig = imageCacheRig();
const { configOf, expectNothingLeft, provider, serve, served, stats } = rig;
let poolPath = '';

beforeAll(async () => {
  ({ poolPath } = await rig.start());
});

afterAll(() => rig.stop());

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
    const probe = await failure(precheckBytes(provider(), HOST, 'imgtest-empty'));
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

  it('a qcow2 backed over the network (nbd://): permanent', async () => {
    const err = await failure(ensureBaseImage(provider(), HOST, 'imgtest-nbd', {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_CONTENT', kind: 'permanent' });
    expect(err.message).toMatch(/backing file/);
    await expectNothingLeft('imgtest-nbd');
  });

  it('a qcow2 whose data is an external file: permanent', async () => {
    // libvirt 9.0's volume XML shows no backing store for it, but qemu opens the file the
    // header names for the guest's disk: any file on the host the image's maker chose.
    const err = await failure(ensureBaseImage(provider(), HOST, 'imgtest-datafile', {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_CONTENT', kind: 'permanent' });
    expect(err.message).toMatch(/external data file/);
    await expectNothingLeft('imgtest-datafile');
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
