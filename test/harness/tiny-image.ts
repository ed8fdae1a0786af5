// The image the queue tests boot: an empty qcow2 (the guest finds nothing to boot, which the
// queue does not need), of a size of its own so that each fleet's image has its own digest and
// so its own base volume on the hosts.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export async function tinyImage(dir: string): Promise<{ path: string; sha256: string }> {
  const file = path.join(dir, 'tiny.qcow2');
  const sizeKiB = 65_536 + 64 * Math.floor(Math.random() * 10_000);
  await run('qemu-img', ['create', '-q', '-f', 'qcow2', file, `${sizeKiB}K`]);
  const sha256 = (await run('sha256sum', [file])).stdout.split(' ')[0] ?? '';
  return { path: file, sha256 };
}
