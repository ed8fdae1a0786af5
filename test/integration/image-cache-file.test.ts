// Images from local files (a `file:///…` URL or an absolute path, docs/image-cache.md) through
// the same fill as downloads, against the real libvirtd through sshd: the base holds the file's
// bytes, both spellings share one base, the precheck reads the file's size, and a missing file,
// a directory, an empty file or a wrong digest fail with a clear error, leaving nothing behind.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseVolumeName } from '../../src/provider/image/base-image.js';
import { ensureBaseImage } from '../../src/provider/image/cache.js';
import { openLocalImage } from '../../src/provider/image/local-file.js';
import {
  failure,
  HOST,
  imageCacheRig,
  precheckBytes,
  sha256File,
} from '../harness/image-cache-rig.js';

const rig = imageCacheRig();
const { configOf, provider, served } = rig;
let poolPath = '';
let workDir = '';

beforeAll(async () => {
  ({ poolPath, workDir } = await rig.start());
});

afterAll(() => rig.stop());

describe('an image from a local file', () => {
  it("fills the base with the file's bytes; file:// and the path are one image", async () => {
    const local = served('file-small');
    expect(configOf('imgtest-file-small').url).toMatch(/^file:\/\/\/.*local%20image\.qcow2$/);
    expect(configOf('imgtest-file-url').url).toBe(configOf('imgtest-file-small').url);
    expect(await precheckBytes(provider(), HOST, 'imgtest-file-small')).toBe(local.size);

    const base = await ensureBaseImage(provider(), HOST, 'imgtest-file-small', {});
    expect(base).toMatchObject({ format: 'qcow2', sha256: local.sha256 });
    expect(await sha256File(path.join(poolPath, base.volumeName))).toBe(local.sha256);
    // The other spelling names the same base: found, not filled again.
    const again = await ensureBaseImage(provider(), HOST, 'imgtest-file-url', {});
    expect(again.volumeName).toBe(base.volumeName);
  });

  it.each([
    ['file-missing', /no-such\.qcow2 does not exist$/, 'permanent'],
    ['file-dir', /is not a regular file$/, 'permanent'],
  ])('%s: ERR_IMAGE_FILE naming the path, nothing left behind', async (name, message, kind) => {
    const image = `imgtest-${name}`;
    const err = await failure(ensureBaseImage(provider(), HOST, image, {}));
    expect(err).toMatchObject({ code: 'ERR_IMAGE_FILE', kind });
    expect(err.message).toMatch(new RegExp(`^image '${image}': `));
    expect(err.message).toMatch(message);
    await rig.expectNothingLeft(image);
  });

  it('an empty file is ERR_IMAGE_EMPTY; a wrong digest ERR_IMAGE_DIGEST_MISMATCH; nothing left', async () => {
    const empty = await failure(ensureBaseImage(provider(), HOST, 'imgtest-file-empty', {}));
    expect(empty).toMatchObject({ code: 'ERR_IMAGE_EMPTY', kind: 'permanent' });
    expect(empty.message).toContain(path.join(workDir, 'empty.qcow2'));
    await rig.expectNothingLeft('imgtest-file-empty');

    const wrong = await failure(ensureBaseImage(provider(), HOST, 'imgtest-file-mismatch', {}));
    expect(wrong).toMatchObject({ code: 'ERR_IMAGE_DIGEST_MISMATCH', kind: 'permanent' });
    await rig.expectNothingLeft('imgtest-file-mismatch');
    expect(baseVolumeName(configOf('imgtest-file-mismatch'))).not.toBe(
      baseVolumeName(configOf('imgtest-file-small')),
    );
  });

  it('a path that runs through a file (ENOTDIR): permanent, with the reason', async () => {
    const file = path.join(workDir, 'plain.qcow2');
    await fs.writeFile(file, 'x');
    const err = await failure(
      openLocalImage('x', path.join(file, 'inner.qcow2'), { signal: AbortSignal.timeout(10_000) }),
    );
    expect(err).toMatchObject({ code: 'ERR_IMAGE_FILE', kind: 'permanent' });
    expect(err.message).toMatch(/^image 'x': .*inner\.qcow2 cannot be read: .*ENOTDIR/);
  });
});
