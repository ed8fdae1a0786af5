// What the image cache (SPEC §5) finds in the pool before a fill and still has to download,
// against the real libvirtd through the harness's sshd, with images served by a real HTTP
// server on port 0: debris (a junk marker, a base without one) removed and refilled, and
// the precheck's size from HEAD or from a GET's headers.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseVolumeName, markerVolumeName } from '../../src/provider/image/base-image.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import {
  HOST,
  imageCacheRig,
  MiB,
  POOL,
  poolVolumes,
  precheckBytes,
  sha256File,
} from '../harness/image-cache-rig.js';
import { virsh } from '../harness/virsh.js';

const rig = imageCacheRig();
const { configOf, expectNothingLeft, extraVolumes, provider, serve, served, stats } = rig;
let workDir = '';
let poolPath = '';

beforeAll(async () => {
  ({ workDir, poolPath } = await rig.start());
});

afterAll(() => rig.stop());

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
    expect(await precheckBytes(provider(), HOST, 'imgtest-nomarker')).toBe(served('nomarker').size);
    const base = await ensureBaseImage(provider(), HOST, 'imgtest-nomarker', {});
    expect(stats('nomarker').gets).toBe(1);
    expect(await sha256File(base.path)).toBe(served('nomarker').sha256);
    expect(await poolVolumes()).toContain(markerVolumeName(image));
  });

  it("is removed before the pool-space precheck: a dead fill's space counts as free", async () => {
    // A fill cut short (a worker killed, a daemon restarted) leaves a base of many GiB: counted
    // as used, it would refuse every later create of the image with ERR_POOL_FULL, for good.
    const image = configOf('imgtest-debrisfirst');
    await makeVolume(baseVolumeName(image), randomBytes(4096));
    let seen: string[] = [];
    const base = await ensureBaseImage(provider(), HOST, 'imgtest-debrisfirst', {
      beforeFill: async () => {
        seen = await poolVolumes();
      },
    });
    expect(seen).not.toContain(baseVolumeName(image));
    expect(seen.length).toBeGreaterThan(0);
    expect(await sha256File(base.path)).toBe(served('debrisfirst').sha256);
  });
});

describe("the size a fill's precheck is given", () => {
  it('takes the size from HEAD when the server answers it', async () => {
    expect(await precheckBytes(provider(), HOST, 'imgtest-headok')).toBe(served('headok').size);
    expect(stats('headok')).toMatchObject({ heads: 1, gets: 0 });
  });

  it('falls back to the headers of a GET when HEAD is refused, and leaves its body unread', async () => {
    serve('headless', {
      data: served('headless').bytes!,
      refuseHead: true,
      stall: { afterBytes: MiB, until: () => new Promise(() => undefined), timeoutMs: 10_000 },
    });
    expect(await precheckBytes(provider(), HOST, 'imgtest-headless')).toBe(8 * MiB);
    expect(stats('headless')).toMatchObject({ heads: 1, gets: 1 });
    await expect.poll(() => stats('headless').closedEarly).toBe(1);
    expect(stats('headless').bytesSent).toBeLessThanOrEqual(MiB);
    expect(stats('headless').completed).toBe(0);
    await expectNothingLeft('imgtest-headless');
  });
});
