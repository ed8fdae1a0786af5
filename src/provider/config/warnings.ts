// Problems worth a line at start that are not configuration errors (`kvm2 config check` and
// the worker's start print them). Apart from load.ts: reading a key file needs the SSH
// transport's key parser, which kvm2/client (that parses configurations too) must not load.
import { accessSync, constants as fsConstants, readFileSync, statSync } from 'node:fs';
import { parseClientKey } from '../../libvirt/transport/ssh-keys.js';
import { parseLibvirtUri } from '../../libvirt/transport/uri.js';
import { formatPath } from './config-path.js';
import type { Kvm2Config } from './schema.js';

function unreadable(file: string): string | undefined {
  try {
    if (!statSync(file).isFile()) return 'not a regular file';
    accessSync(file, fsConstants.R_OK);
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
}

/**
 * A readable key file that every dial would still fail with (no private key in it, or one under
 * a passphrase), or that others can read (ssh(1) refuses such a key; kvm2 uses it, and says so).
 * Never the file's content.
 */
function keyFileWarnings(at: string, file: string, host: string): string[] {
  const warnings: string[] = [];
  try {
    if (parseClientKey(readFileSync(file)) === undefined) {
      warnings.push(
        `${at}: keyfile ${file} holds no usable private key (passphrase-protected keys are not supported); dials to ${host} fail until it does (it is read again at every dial)`,
      );
    }
    const mode = statSync(file).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      warnings.push(
        `${at}: keyfile ${file} can be read by others (mode ${mode.toString(8).padStart(4, '0')}); ssh(1) would refuse it: chmod 600 ${file}`,
      );
    }
  } catch {
    // Gone since it was found readable: the dial reports it.
  }
  return warnings;
}

/** deploy/config.example.yaml's board password, which a deployment may keep by mistake. */
const EXAMPLE_BOARD_PASSWORD = 'change-me';
/** Shorter board passwords are a warning (the board takes any; Basic auth has no lockout). */
const BOARD_PASSWORD_MIN = 16;

/** The board's password, as a warning when it is the example's or short; never the password. */
function boardPasswordWarnings(config: Kvm2Config): string[] {
  const password = config.board.auth?.password;
  if (password === undefined) return [];
  const at = formatPath(['board', 'auth', 'password']);
  if (password === EXAMPLE_BOARD_PASSWORD) {
    return [
      `${at}: is deploy/config.example.yaml's placeholder: anyone who reads that file can use the board; set a password of your own`,
    ];
  }
  if ([...password].length < BOARD_PASSWORD_MIN) {
    return [
      `${at}: has ${[...password].length} characters: a password of ${BOARD_PASSWORD_MIN} or more (openssl rand -base64 18) keeps guessing out`,
    ];
  }
  return [];
}

/**
 * Problems worth a line at start that are not errors: SSH key and known_hosts files that cannot
 * be read now, a key file without a usable key or open to others (read again at every dial, so
 * fixing them needs no restart); a board password that is the example's or short.
 */
export function configWarnings(config: Kvm2Config): string[] {
  const warnings: string[] = boardPasswordWarnings(config);
  config.hosts.forEach((h, i) => {
    const ssh = parseLibvirtUri(h.uri).ssh;
    if (ssh === undefined) return;
    const files: [string, string | undefined][] = [
      ['keyfile', ssh.keyFile],
      ['known_hosts', ssh.knownHostsFile],
    ];
    const at = formatPath(['hosts', i, 'uri']);
    for (const [what, file] of files) {
      const why = file === undefined ? undefined : unreadable(file);
      if (file !== undefined && why !== undefined) {
        warnings.push(
          `${at}: ${what} ${file} cannot be read (${why}); dials to ${h.name} fail until it can (it is read again at every dial)`,
        );
      }
    }
    if (ssh.keyFile !== undefined && unreadable(ssh.keyFile) === undefined) {
      warnings.push(...keyFileWarnings(at, ssh.keyFile, h.name));
    }
  });
  return warnings;
}
