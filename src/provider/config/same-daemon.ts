// Which libvirt daemon a host's URI reaches, as far as the URI alone can tell: two host entries
// on one daemon would list each of its domains twice, under two ids, and GC keeping one id would
// delete the other. The key keeps what selects the daemon and the driver connection, and drops
// how kvm2 gets there (libvirt docs/uri.rst):
//   transport   unix, or ssh to host:port (host name case-insensitive, port 22 if unwritten);
//               `qemu:///system` is `qemu+unix:///system`.
//   socket      the daemon's socket on that machine (`socket=`, else libvirt's default), with
//               `/var/run/` read as `/run/` (a symlink to it on every current distribution).
//   open name   what CONNECT_OPEN asks for: qemu:///system, qemu:///session, test:///default.
//   ssh user    only for /session, where each user has a daemon of their own; a system daemon
//               is the same whoever logs in.
// keyfile, known_hosts and no_tty select nothing. What only the machine knows (another
// symlinked socket, two names of one address) is left to listByTag, which refuses an instance
// seen under two hosts (ERR_DUPLICATE_INSTANCE).
import path from 'node:path';
import { parseLibvirtUri, type LibvirtTarget } from '../../libvirt/transport/uri.js';

/** A string equal for two URIs that surely reach one daemon; undefined if `uri` does not parse. */
export function daemonKey(uri: string): string | undefined {
  let target: LibvirtTarget;
  try {
    target = parseLibvirtUri(uri);
  } catch {
    return undefined; // reported on the uri itself
  }
  const socket = path.posix.normalize(target.socketPath).replace(/^\/var\/run\//, '/run/');
  const { ssh } = target;
  if (ssh === undefined) return `unix ${socket} ${target.openName}`;
  const host = ssh.host.toLowerCase().replace(/\.$/, '');
  const user = target.openName.endsWith('/session') ? ` ${ssh.user}` : '';
  return `ssh ${host}:${ssh.port}${user} ${socket} ${target.openName}`;
}
