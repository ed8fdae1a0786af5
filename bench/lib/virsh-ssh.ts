// libvirt's own client over the same sshd as ours: virsh runs the ssh binary, so a wrapper
// points it at the harness's known_hosts (libvirt's ssh transport takes no known_hosts=).
// The wrapper also gives ssh the key exchange and cipher that ours negotiates with this sshd
// (ssh2 1.17: curve25519-sha256@libssh.org, aes128-gcm@openssh.com), so both sides do the same
// work: OpenSSH's default, sntrup761x25519-sha512, cost ~100 ms more a login here (`ssh true`
// 253 against 147 ms), which would count against virsh on every SSH login it makes.
import fs from 'node:fs';
import path from 'node:path';
import type { Sshd } from '../../test/harness/sshd.js';

/** What ssh2 negotiates with OpenSSH 9.2's sshd (its first choices that sshd offers). */
const SAME_KEX = 'curve25519-sha256@libssh.org';
const SAME_CIPHER = 'aes128-gcm@openssh.com';

export function cClientUri(sshd: Sshd, driverPath = '/system'): string {
  const wrapper = path.join(sshd.dir, 'ssh-wrapper');
  if (!fs.existsSync(wrapper)) {
    fs.writeFileSync(
      wrapper,
      `#!/bin/sh\nexec ssh -o UserKnownHostsFile=${sshd.knownHostsPath} -o StrictHostKeyChecking=yes ` +
        `-o KexAlgorithms=${SAME_KEX} -o Ciphers=${SAME_CIPHER} "$@"\n`,
      { mode: 0o755 },
    );
  }
  return `qemu+ssh://root@127.0.0.1:${sshd.port}${driverPath}?keyfile=${sshd.clientKeyPath}&command=${wrapper}&no_tty=1`;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}
