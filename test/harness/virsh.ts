// virsh, libvirt's own client, as the independent witness in integration tests.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const LOCAL_URI = 'qemu:///system';

export async function virsh(args: string[], uri = LOCAL_URI): Promise<string> {
  const { stdout } = await run('virsh', ['-c', uri, '-q', ...args], { maxBuffer: 64 << 20 });
  return stdout;
}

/** virsh, expected to fail; resolves with its stderr. */
export async function virshFails(args: string[], uri = LOCAL_URI): Promise<string> {
  try {
    await run('virsh', ['-c', uri, '-q', ...args]);
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? err);
  }
  throw new Error(`virsh ${args.join(' ')} succeeded, a failure was expected`);
}

/** A name no other test run uses, valid as a libvirt domain or volume name. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}
