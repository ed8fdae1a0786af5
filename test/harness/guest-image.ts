// kvm2's test guest image (docs/guest-image.md): a small UEFI-bootable qcow2 built from Debian
// packages by scripts/build-guest-image.sh and cached under $KVM2_CACHE/guest-image/. The first
// call in a process runs the script (a cache hit takes a second or two, a cold build a minute or
// less); later calls share its result.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../scripts/build-guest-image.sh', import.meta.url));
/** A cold build downloads about 30 MB and unpacks a kernel: minutes at worst. */
const BUILD_TIMEOUT_MS = 10 * 60_000;

export interface GuestImage {
  /** The qcow2 file, absolute; read it, never write it (other runs share it). */
  readonly path: string;
  /** The cache key: a hash of the script and the package versions. */
  readonly key: string;
  /** How long the build that made this image took. */
  readonly buildMs: number;
  /** When that build finished (ISO 8601). */
  readonly builtAt: string;
  readonly sizeBytes: number;
  /** True when the script found the image in its cache instead of building it. */
  readonly cached: boolean;
  /** How long this process waited for the script (build or cache lookup). */
  readonly waitedMs: number;
  /** The Debian packages the image was made from, with their versions. */
  readonly packages: Readonly<Record<string, string>>;
  readonly kernel: string;
}

interface BuildInfo {
  key: string;
  builtAt: string;
  buildMs: number;
  sizeBytes: number;
  kernel: string;
  packages: Record<string, string>;
}

let pending: Promise<GuestImage> | undefined;

/** The guest image, built on first use and cached on disk. `force` rebuilds it. */
export function ensureGuestImage(options: { force?: boolean } = {}): Promise<GuestImage> {
  if (options.force === true || pending === undefined) {
    const attempt = build(options.force === true);
    pending = attempt;
    // A failed build is not remembered: the next caller tries again.
    attempt.catch(() => {
      if (pending === attempt) pending = undefined;
    });
  }
  return pending;
}

async function build(force: boolean): Promise<GuestImage> {
  const started = Date.now();
  const { stdout, stderr } = await runScript(force ? ['--force'] : []);
  const waitedMs = Date.now() - started;
  const imagePath = stdout.trim().split('\n').at(-1) ?? '';
  if (!path.isAbsolute(imagePath)) {
    throw new Error(`${SCRIPT} printed no image path; its log:\n${stderr}`);
  }
  const info = JSON.parse(
    await readFile(path.join(path.dirname(imagePath), 'build.json'), 'utf8'),
  ) as BuildInfo;
  return {
    path: imagePath,
    key: info.key,
    buildMs: info.buildMs,
    builtAt: info.builtAt,
    sizeBytes: info.sizeBytes,
    cached: /^build-guest-image: cached:/m.test(stderr),
    waitedMs,
    packages: info.packages,
    kernel: info.kernel,
  };
}

function runScript(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return runImageScript(SCRIPT, args, BUILD_TIMEOUT_MS);
}

/** Runs an image build script; rejects with the tail of its log when it fails. */
export function runImageScript(
  script: string,
  args: string[],
  timeoutMs: number,
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      'bash',
      [script, ...args],
      { timeout: timeoutMs, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (err !== null) {
          const tail = stderr.split('\n').slice(-40).join('\n');
          reject(new Error(`${script} failed (${err.message.split('\n')[0]}):\n${tail}`));
        } else {
          resolve({ stdout, stderr });
        }
      },
    );
  });
}
