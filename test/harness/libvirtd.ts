// Restarts the machine's libvirtd (as scripts/setup.sh started it: `libvirtd -d`), for tests
// of a daemon that goes away mid-operation. Running domains survive: qemu runs on its own and
// libvirtd reattaches to it at start.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`libvirtd restart: ${what} did not happen in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const running = (): Promise<boolean> =>
  run('pgrep', ['-x', 'libvirtd']).then(
    () => true,
    () => false,
  );

export async function restartLibvirtd(): Promise<void> {
  await run('pkill', ['-TERM', '-x', 'libvirtd']).catch(() => undefined);
  await until('libvirtd exit', async () => !(await running()));
  await run('libvirtd', ['-d']);
  await until('libvirtd answer', () =>
    run('virsh', ['-c', 'qemu:///system', 'version']).then(
      () => true,
      () => false,
    ),
  );
}
