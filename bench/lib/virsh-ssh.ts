// libvirt's own client over the same sshd as ours: virsh runs the ssh binary, so a wrapper
// points it at the harness's known_hosts (libvirt's ssh transport takes no known_hosts=).
import fs from 'node:fs';
import path from 'node:path';
import type { Sshd } from '../../test/harness/sshd.js';

export function cClientUri(sshd: Sshd, driverPath = '/system'): string {
  const wrapper = path.join(sshd.dir, 'ssh-wrapper');
  if (!fs.existsSync(wrapper)) {
    fs.writeFileSync(
      wrapper,
      `#!/bin/sh\nexec ssh -o UserKnownHostsFile=${sshd.knownHostsPath} -o StrictHostKeyChecking=yes "$@"\n`,
      { mode: 0o755 },
    );
  }
  return `qemu+ssh://root@127.0.0.1:${sshd.port}${driverPath}?keyfile=${sshd.clientKeyPath}&command=${wrapper}&no_tty=1`;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}
