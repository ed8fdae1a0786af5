// A create that finds a base's marker while a fill is still writing it (the real libvirtd,
// through the harness's sshd). libvirt refuses to read a volume it is still creating ("volume
// '…' is still being allocated", OPERATION_INVALID, a permanent kind of its own): seen in a
// fresh machine's run, where a burst of creates across a Sentinel failover had one create fail
// for good on the marker another create's fill was writing. It is a busy fill: a transient
// ERR_LOCK_BUSY that the retry gets past, and nothing of the other fill's is removed.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { classifyError } from '../../src/errors/classify.js';
import { baseVolumeName, markerVolumeName } from '../../src/provider/image/base-image.js';
import { findBaseImage } from '../../src/provider/image/cache.js';
import { failure, HOST, imageCacheRig, POOL, poolVolumes } from '../harness/image-cache-rig.js';
import { LOCAL_URI, virsh } from '../harness/virsh.js';

const rig = imageCacheRig();

beforeAll(async () => {
  await rig.start();
});

afterAll(() => rig.stop());

/** Resolves once `name` is listed in the pool (libvirt lists a volume before it is built). */
async function listed(name: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await poolVolumes()).includes(name)) {
    if (Date.now() > deadline) throw new Error(`${name} was never listed`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

it('a marker still being written by a fill: ERR_LOCK_BUSY (transient), and the fill left alone', async () => {
  const image = rig.configOf('imgtest-big');
  const base = baseVolumeName(image);
  const marker = markerVolumeName(image);
  const source = `${rig.run}-marker-source`;
  rig.extraVolumes.push(base, marker, source);
  await virsh(['vol-create-as', POOL, base, '1M', '--format', 'raw']);
  // The marker is cloned from a 2 GiB volume: libvirt keeps it "being built" while it copies,
  // long enough for the lookup below to meet it in that state.
  await virsh(['vol-create-as', POOL, source, '2G', '--format', 'raw']);
  const clone = spawn(
    'virsh',
    ['-q', '-c', LOCAL_URI, 'vol-clone', '--pool', POOL, source, marker],
    {
      stdio: 'ignore',
    },
  );
  const cloned = new Promise<number | null>((resolve) => clone.on('exit', resolve));
  try {
    await listed(marker);
    const err = await failure(findBaseImage(rig.provider(), HOST, 'imgtest-big', {}));
    expect(err).toMatchObject({ code: 'ERR_LOCK_BUSY', kind: 'transient' });
    expect(classifyError(err)).toBe('transient');
    expect(err.message).toContain(marker);
    expect(err.message).toContain('imgtest-big');
  } finally {
    expect(await cloned).toBe(0);
  }
  // Nothing of the fill's was removed: both names still there.
  const volumes = await poolVolumes();
  expect(volumes).toContain(base);
  expect(volumes).toContain(marker);
}, 60_000);
