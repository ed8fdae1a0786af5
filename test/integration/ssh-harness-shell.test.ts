// The harness's sshd runs a session's command without the login user's rc files. sshd runs
// every command through the user's shell; Debian's bash reads ~/.bashrc for a command sshd
// started, and a machine's ~/.bashrc can cost (this image's root runs `pyenv init`: ~0.65 s of
// CPU and a lock that many shells queue on). Every kvm2 dial runs `exec true` beside its
// forward (src/libvirt/transport/ssh.ts) and virsh's ssh transport runs its proxy command the
// same way, so on such a machine each dial left a shell busy in the background, and a suite
// of dials (the soak, the fleet) piled them up until sshd missed its 5 s auth timeouts.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSshd, type Sshd } from '../harness/sshd.js';

const run = promisify(execFile);

describe('the harness’s sshd', () => {
  let sshd: Sshd;
  beforeAll(async () => {
    sshd = await startSshd();
  });
  afterAll(async () => {
    await sshd?.stop();
  });

  /** `command` through the ssh binary, as virsh's transport runs its proxy. */
  const ssh = async (command: string): Promise<string> =>
    (
      await run('ssh', [
        ...['-p', String(sshd.port), '-i', sshd.clientKeyPath],
        ...['-o', `UserKnownHostsFile=${sshd.knownHostsPath}`, '-o', 'StrictHostKeyChecking=yes'],
        ...['-o', 'BatchMode=yes', `root@${sshd.host}`, command],
      ])
    ).stdout;

  it('runs a command in a shell that read no rc file: its PATH is the one sshd gave it', async () => {
    const out = await ssh(
      `echo "now=$PATH"; tr '\\0' '\\n' < /proc/$$/environ | sed -n 's/^PATH=/given=/p; s/^SHLVL=/level=/p'`,
    );
    const now = /^now=(.*)$/m.exec(out)?.[1];
    const given = /^given=(.*)$/m.exec(out)?.[1];
    expect(given).toMatch(/\/usr\/bin/);
    expect(now).toBe(given);
    // Why, on any machine (the PATH above differs only where the rc file changes it): the shell
    // started one level down, which is what makes bash skip ~/.bashrc for an sshd command.
    expect(/^level=(.*)$/m.exec(out)?.[1]).toBe('1');
  });
});
