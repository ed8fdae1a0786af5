// TCP_NODELAY as another process holds it: the harness borrows the process's socket with
// pidfd_getfd(2) (Linux ≥ 5.6, root) and asks getsockopt. Node has neither call, so a few lines
// of the Debian python3 that setup installs (for python3-libvirt) do it. Tells whether sshd
// switched Nagle's algorithm off on a connection (src/libvirt/transport/ssh.ts, askForNoDelay).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface HeldTcpSocket {
  readonly pid: number;
  readonly fd: number;
  /** The remote end's port: the client's side of the connection. */
  readonly peerPort: number;
  readonly noDelay: boolean;
}

const PROBE = String.raw`
import ctypes, json, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_pidfd_getfd = 438  # the same number on every architecture
port = int(sys.argv[1])
found = []
for pid in map(int, sys.argv[2:]):
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        pidfd = os.pidfd_open(pid)
    except OSError:
        continue  # the process has gone
    for name in fds:
        try:
            if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                continue
        except OSError:
            continue
        fd = libc.syscall(SYS_pidfd_getfd, pidfd, int(name), 0)
        if fd < 0:
            raise OSError(ctypes.get_errno(), f"pidfd_getfd {pid}/{name}")
        s = socket.socket(fileno=fd)
        try:
            if s.type != socket.SOCK_STREAM or s.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            if s.getsockname()[1] != port:
                continue
            try:
                peer = s.getpeername()[1]
            except OSError:
                continue  # the listener
            nodelay = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            found.append({"pid": pid, "fd": int(name), "peerPort": peer, "noDelay": nodelay})
        finally:
            s.close()
    os.close(pidfd)
print(json.dumps(found))
`;

/** The connected TCP sockets on local `port` that processes `pids` hold, with TCP_NODELAY. */
export async function heldTcpSockets(
  port: number,
  pids: readonly number[],
): Promise<HeldTcpSocket[]> {
  // /usr/bin/python3: Debian's, whatever another python on PATH lacks.
  const { stdout } = await execFileAsync('/usr/bin/python3', [
    '-c',
    PROBE,
    String(port),
    ...pids.map(String),
  ]);
  return JSON.parse(stdout) as HeldTcpSocket[];
}
