// SSH key pairs made with ssh-keygen, for the harness's sshd (host and client keys) and for
// tests that need a key the daemon does not know.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export type KeyType = 'ed25519' | 'ecdsa' | 'rsa';

export interface KeyPair {
  readonly privatePath: string;
  readonly publicPath: string;
  /** SSH wire-format public key, as a server presents it. */
  readonly blob: Buffer;
  /** The `.pub` line: `ssh-ed25519 AAAA… comment`. */
  readonly publicLine: string;
}

/** A new key pair `<dir>/<name>` (and `.pub`), without a passphrase. */
export async function makeKeyPair(dir: string, name: string, type: KeyType): Promise<KeyPair> {
  const privatePath = path.join(dir, name);
  await execFileAsync('ssh-keygen', [
    '-q',
    '-t',
    type,
    '-N',
    '',
    '-C',
    `kvm2-test-${name}`,
    '-f',
    privatePath,
  ]);
  const publicPath = `${privatePath}.pub`;
  const publicLine = (await readFile(publicPath, 'utf8')).trim();
  const base64 = publicLine.split(/\s+/)[1];
  if (base64 === undefined) throw new Error(`ssh-keygen wrote an odd public key to ${publicPath}`);
  return { privatePath, publicPath, blob: Buffer.from(base64, 'base64'), publicLine };
}
