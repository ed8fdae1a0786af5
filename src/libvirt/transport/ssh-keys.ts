// What an SSH dial reads from disk, fresh at every dial (a rotated key or an edited known_hosts
// needs no restart): the known_hosts entries, the client's keys, and from the known host key
// types the host key algorithms to offer.
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import ssh2 from 'ssh2';
import type { ParsedKey, ServerHostKeyAlgorithm } from 'ssh2';
import { parseKnownHosts, type KnownHostEntry } from './known-hosts.js';
import type { SshTarget } from './uri.js';

const { utils } = ssh2;

// ssh2's default host key algorithm order (lib/protocol/constants.js), and the algorithms that
// carry each key type. `algorithms.serverHostKey` replaces the list, so we give it whole.
const HOST_KEY_ALGORITHMS: readonly ServerHostKeyAlgorithm[] = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];
const ALGORITHMS_BY_KEY_TYPE: Readonly<Record<string, readonly ServerHostKeyAlgorithm[]>> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
  'ssh-dss': ['ssh-dss'],
};

/**
 * Host key algorithms with the types known_hosts holds for the host first, as ssh(1) orders
 * them, so a host known by its ed25519 key is not called unknown because rsa was offered first.
 */
export function hostKeyAlgorithmsFor(knownTypes: readonly string[]): ServerHostKeyAlgorithm[] {
  const preferred = knownTypes.flatMap((t) =>
    Object.hasOwn(ALGORITHMS_BY_KEY_TYPE, t) ? (ALGORITHMS_BY_KEY_TYPE[t] ?? []) : [],
  );
  return [...new Set([...preferred, ...HOST_KEY_ALGORITHMS])];
}

/** known_hosts entries, or the reason the file could not be read (that host is then unknown). */
export async function readKnownHosts(ssh: SshTarget): Promise<KnownHostEntry[] | Error> {
  try {
    return parseKnownHosts(await readFile(ssh.knownHostsFile, 'utf8'));
  } catch (err) {
    return new Error((err as NodeJS.ErrnoException).code ?? 'unreadable');
  }
}

export interface ClientKey {
  readonly path: string;
  readonly key: ParsedKey;
}

// ssh(1)'s default identities, tried when the URI names no key file (uri.ts: SshTarget.keyFile).
export const DEFAULT_IDENTITIES = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

/**
 * The client keys, read now so that a rotated key is picked up. The named key file must be
 * usable; default identities that are missing or need a passphrase are skipped, as ssh(1)
 * skips them in batch mode. Messages name the file, never its content.
 */
export async function readClientKeys(ssh: SshTarget): Promise<ClientKey[] | Error> {
  if (ssh.keyFile !== undefined) {
    const key = await readClientKey(ssh.keyFile);
    return key instanceof Error ? key : [key];
  }
  const home = path.join(os.homedir(), '.ssh');
  const keys = await Promise.all(
    DEFAULT_IDENTITIES.map((name) => readClientKey(path.join(home, name))),
  );
  return keys.filter((k): k is ClientKey => !(k instanceof Error));
}

async function readClientKey(file: string): Promise<ClientKey | Error> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    return new Error(
      `cannot read key file ${file} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`,
    );
  }
  const key = parseClientKey(bytes);
  if (key === undefined) {
    return new Error(
      `key file ${file} holds no usable private key (passphrases are not supported)`,
    );
  }
  return { path: file, key };
}

/** The private key in a key file's bytes; undefined for none, or one under a passphrase. */
export function parseClientKey(bytes: Buffer): ParsedKey | undefined {
  const parsed = utils.parseKey(bytes);
  const key = Array.isArray(parsed) ? (parsed[0] as ParsedKey | undefined) : parsed;
  return key === undefined || key instanceof Error || !key.isPrivateKey() ? undefined : key;
}
