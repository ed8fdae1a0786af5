// libvirt connection URIs as libvirt users write them (libvirt docs/uri.rst):
//   qemu:///system                       local daemon socket
//   qemu+unix:///system?socket=PATH      local, explicit socket
//   qemu+ssh://user@host:port/system?keyfile=&known_hosts=&socket=
//   test:///default, test+unix://…, test+ssh://…   libvirt's mock driver, through the daemon
// The name sent in CONNECT_OPEN drops the transport, the host and the parameters we consume,
// as libvirt's remote driver does: qemu+ssh://root@h/system?keyfile=k -> qemu:///system.
import os from 'node:os';
import path from 'node:path';
import { Kvm2Error, type Kvm2ErrorOptions } from '../../errors/error.js';
import { redactUrl } from '../../errors/redact-url.js';

export const DEFAULT_SOCKET = '/var/run/libvirt/libvirt-sock';

export interface SshTarget {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  /** Private key file, read at every dial. Absent: ssh-agent only (and the default keys). */
  readonly keyFile?: string | undefined;
  readonly knownHostsFile: string;
}

export interface LibvirtTarget {
  /** The URI as given, with nothing secret in it (keys are files, never inline). */
  readonly uri: string;
  readonly driver: string;
  readonly transport: 'unix' | 'ssh';
  /** Sent in CONNECT_OPEN, e.g. `qemu:///system`. */
  readonly openName: string;
  /** The daemon's socket, local or on the remote host. */
  readonly socketPath: string;
  readonly ssh?: SshTarget | undefined;
}

export class UriError extends Kvm2Error {
  declare readonly code: 'ERR_LIBVIRT_URI';
  override name = 'UriError';

  constructor(message: string, options?: Kvm2ErrorOptions) {
    super('ERR_LIBVIRT_URI', message, options);
  }
}

const DRIVERS = new Set(['qemu', 'test']);
// Parameters we act on. Others are refused: a typo must not silently change the target.
const KNOWN_PARAMS = new Set(['socket', 'keyfile', 'known_hosts', 'no_verify', 'no_tty', 'name']);

export function parseLibvirtUri(uri: string): LibvirtTarget {
  // Messages quote the URI without its password.
  const shown = redactUrl(uri);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new UriError(`not a libvirt URI: '${shown}'`);
  }
  const scheme = url.protocol.replace(/:$/, '');
  const [driver, transport = url.hostname === '' ? 'unix' : 'tls', ...extra] = scheme.split('+');
  if (driver === undefined || !DRIVERS.has(driver) || extra.length > 0) {
    throw new UriError(`unsupported libvirt driver in '${shown}': kvm2 speaks qemu and test`);
  }
  if (transport !== 'unix' && transport !== 'ssh') {
    throw new UriError(
      `unsupported transport '${transport}' in '${shown}': kvm2 reaches hosts by unix socket or ssh`,
    );
  }
  const seen = new Set<string>();
  for (const key of url.searchParams.keys()) {
    if (!KNOWN_PARAMS.has(key)) throw new UriError(`unknown parameter '${key}' in '${shown}'`);
    // libvirt takes the last of a repeated parameter; a check of the first would let one by.
    if (seen.has(key)) throw new UriError(`parameter '${key}' given twice in '${shown}'`);
    seen.add(key);
  }
  if (url.password !== '') {
    throw new UriError(
      `a password in '${shown}' is never used: kvm2 authenticates by key (keyfile= or the agent)`,
    );
  }
  if (url.searchParams.get('no_verify') === '1') {
    throw new UriError(`no_verify is refused in '${shown}': kvm2 always checks the host key`);
  }
  const pathname = url.pathname === '' ? '/' : url.pathname;
  if (driver === 'qemu' && pathname !== '/system' && pathname !== '/session') {
    throw new UriError(`qemu URIs name /system or /session, not '${pathname}' in '${shown}'`);
  }
  const socketParam = url.searchParams.get('socket');
  if (socketParam !== null && !path.isAbsolute(socketParam)) {
    throw new UriError(`socket must be an absolute path in '${shown}'`);
  }
  const socketPath = socketParam ?? DEFAULT_SOCKET;
  const openName = url.searchParams.get('name') ?? `${driver}://${pathname}`;
  const safeUri = uri;

  if (transport === 'unix') {
    if (url.hostname !== '') throw new UriError(`a unix URI names no host: '${shown}'`);
    return { uri: safeUri, driver, transport, openName, socketPath };
  }

  if (url.hostname === '') throw new UriError(`an ssh URI needs a host: '${shown}'`);
  const port = url.port === '' ? 22 : Number(url.port);
  if (port === 0) throw new UriError(`port 0 in '${shown}' is no port to dial`);
  let user: string;
  try {
    user = decodeURIComponent(url.username) || os.userInfo().username;
  } catch {
    throw new UriError(`the user name in '${shown}' is not valid percent-encoding`);
  }
  const home = os.homedir();
  const keyfile = url.searchParams.get('keyfile');
  const knownHosts = url.searchParams.get('known_hosts');
  for (const [name, value] of [
    ['keyfile', keyfile],
    ['known_hosts', knownHosts],
  ] as const) {
    if (value !== null && !path.isAbsolute(value)) {
      throw new UriError(`${name} must be an absolute path in '${shown}'`);
    }
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return {
    uri: safeUri,
    driver,
    transport,
    openName,
    socketPath,
    ssh: {
      host,
      port,
      user,
      keyFile: keyfile ?? undefined,
      knownHostsFile: knownHosts ?? path.join(home, '.ssh', 'known_hosts'),
    },
  };
}
