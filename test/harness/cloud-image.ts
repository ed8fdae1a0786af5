// The Debian 12 cloud image (docs/guest-image.md, issue #17): debootstrap of a minimal system
// with cloud-init and qemu-guest-agent, built by scripts/build-cloud-image.sh (as root) and
// cached under $KVM2_CACHE/cloud-image/<key>/. A cold build takes about two minutes here; a
// cache hit is instant. One build per process, shared by later calls.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runImageScript } from './guest-image.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/build-cloud-image.sh', import.meta.url));
/** debootstrap downloads ~150 MB of packages and unpacks them: minutes on a slow mirror. */
const BUILD_TIMEOUT_MS = 15 * 60_000;

export interface CloudImage {
  /** The qcow2 file, absolute; read it, never write it (other runs share it). */
  readonly path: string;
  /** The cache key: the script's sha256. */
  readonly key: string;
  readonly builtAt: string;
  /** How long the build took, and its debootstrap part. */
  readonly buildMs: number;
  readonly debootstrapMs: number;
  readonly sizeBytes: number;
  readonly virtualBytes: number;
  readonly kernel: string;
  /** The image's cloud-init version (Debian's). */
  readonly cloudInit: string;
  /** True when the script found the image in its cache instead of building it. */
  readonly cached: boolean;
}

let pending: Promise<CloudImage> | undefined;

/** The cloud image, built on first use and cached on disk. */
export function ensureCloudImage(): Promise<CloudImage> {
  if (pending === undefined) {
    const attempt = build();
    pending = attempt;
    // A failed build is not remembered: the next caller tries again.
    attempt.catch(() => {
      if (pending === attempt) pending = undefined;
    });
  }
  return pending;
}

async function build(): Promise<CloudImage> {
  const { stdout, stderr } = await runImageScript(SCRIPT, [], BUILD_TIMEOUT_MS);
  const imagePath = stdout.trim().split('\n').at(-1) ?? '';
  if (!path.isAbsolute(imagePath)) {
    throw new Error(`${SCRIPT} printed no image path; its log:\n${stderr}`);
  }
  const info = JSON.parse(
    await readFile(path.join(path.dirname(imagePath), 'build.json'), 'utf8'),
  ) as Omit<CloudImage, 'path' | 'cached'>;
  return { ...info, path: imagePath, cached: /^build-cloud-image: cached:/m.test(stderr) };
}

/** "built in 120 s (debootstrap 96 s), 183 MiB qcow2, 1536 MiB virtual". */
export function describeCloudImage(image: CloudImage): string {
  const mib = (n: number) => Math.round(n / 1048576);
  return `built in ${Math.round(image.buildMs / 1000)} s (debootstrap ${Math.round(image.debootstrapMs / 1000)} s), ${mib(image.sizeBytes)} MiB qcow2, ${mib(image.virtualBytes)} MiB virtual, kernel ${image.kernel}, cloud-init ${image.cloudInit}${image.cached ? ' (cached)' : ''}`;
}

/** A file's sha256, streamed (the image is ~200 MiB): what images.<name>.sha256 takes. */
export async function fileSha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * network-config v2 with a static address on the NIC with this MAC, named eth0 (Debian's udev
 * would call it enp1s0): what the tests and bench/guest give both kvm2 and virt-install.
 */
export function staticNetworkConfig(mac: string, address: string): string {
  return [
    'version: 2',
    'ethernets:',
    '  eth0:',
    '    match:',
    `      macaddress: "${mac}"`,
    '    set-name: eth0',
    '    addresses:',
    `      - ${address}/24`,
    '',
  ].join('\n');
}
