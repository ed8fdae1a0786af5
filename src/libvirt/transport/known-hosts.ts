// Our own reader of OpenSSH known_hosts files (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"):
//
//   [@revoked|@cert-authority] hostpatterns keytype base64-key [comment]
//
// hostpatterns is a comma list of patterns (`*`, `?`, `!` negation) or one hashed name
// `|1|base64(salt)|base64(HMAC-SHA1(salt, name))`. The name looked up is `host` for port 22
// and `[host]:port` otherwise, lower-cased, as ssh(1) does.
// We keep the semantics of OpenSSH's hostfile.c check_hostkeys_by_key_or_type: a revoked key
// never passes, one equal key passes, another key of the same type means the key changed, and
// no key of that type means the host is unknown for it.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export type KnownHostMarker = 'revoked' | 'cert-authority';

export type KnownHostNames =
  | { readonly kind: 'patterns'; readonly patterns: readonly string[] }
  | { readonly kind: 'hashed'; readonly salt: Buffer; readonly hash: Buffer };

export interface KnownHostEntry {
  /** 1-based line number in the file, for messages. */
  readonly line: number;
  readonly marker: KnownHostMarker | undefined;
  readonly names: KnownHostNames;
  /** The key's own type, e.g. `ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`. */
  readonly keyType: string;
  /** The key in SSH wire format (what the server sends in its KEX reply). */
  readonly key: Buffer;
}

export type HostKeyVerdict = 'match' | 'unknown' | 'mismatch';

const HASH_MAGIC = '|1|';
const SHA1_LENGTH = 20;

/** Parses a known_hosts file. Lines that do not parse are skipped, as ssh(1) skips them. */
export function parseKnownHosts(text: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const entry = parseLine(lines[i] ?? '', i + 1);
    if (entry !== undefined) entries.push(entry);
  }
  return entries;
}

function parseLine(raw: string, line: number): KnownHostEntry | undefined {
  const text = raw.trim();
  if (text === '' || text.startsWith('#')) return undefined;
  const fields = text.split(/\s+/);
  let marker: KnownHostMarker | undefined;
  if (fields[0]?.startsWith('@')) {
    const name = fields.shift();
    if (name === '@revoked') marker = 'revoked';
    else if (name === '@cert-authority') marker = 'cert-authority';
    else return undefined;
  }
  const [hostField, keyTypeField, keyField] = fields;
  if (hostField === undefined || keyTypeField === undefined || keyField === undefined) {
    return undefined;
  }
  const names = parseNames(hostField);
  if (names === undefined) return undefined;
  const key = decodeBase64(keyField);
  if (key === undefined) return undefined;
  const keyType = keyTypeOf(key);
  // The declared type must be the blob's own; ssh(1) rejects the line otherwise.
  if (keyType === undefined || keyType !== keyTypeField) return undefined;
  return { line, marker, names, keyType, key };
}

function parseNames(field: string): KnownHostNames | undefined {
  if (field.startsWith(HASH_MAGIC)) {
    const [saltText, hashText, ...rest] = field.slice(HASH_MAGIC.length).split('|');
    if (saltText === undefined || hashText === undefined || rest.length > 0) return undefined;
    const salt = decodeBase64(saltText);
    const hash = decodeBase64(hashText);
    if (salt?.length !== SHA1_LENGTH || hash?.length !== SHA1_LENGTH) return undefined;
    return { kind: 'hashed', salt, hash };
  }
  const patterns = field.split(',').filter((p) => p !== '');
  if (patterns.length === 0) return undefined;
  return { kind: 'patterns', patterns: patterns.map((p) => p.toLowerCase()) };
}

function decodeBase64(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  const buf = Buffer.from(text, 'base64');
  return buf.length === 0 ? undefined : buf;
}

/** The type string at the head of an SSH wire-format key: uint32 length, then the name. */
export function keyTypeOf(key: Buffer): string | undefined {
  if (key.length < 4) return undefined;
  const length = key.readUInt32BE(0);
  if (length === 0 || length > 64 || 4 + length > key.length) return undefined;
  return key.subarray(4, 4 + length).toString('latin1');
}

/** The name ssh(1) looks up: `host` on port 22, `[host]:port` on any other. */
export function knownHostsName(host: string, port: number): string {
  const name = host.toLowerCase();
  return port === 22 ? name : `[${name}]:${port}`;
}

/** Whether an entry's host field covers this host and port. */
export function entryCoversHost(entry: KnownHostEntry, host: string, port: number): boolean {
  const name = knownHostsName(host, port);
  if (entry.names.kind === 'hashed') {
    const hash = hashName(name, entry.names.salt);
    return timingSafeEqual(hash, entry.names.hash);
  }
  // OpenSSH match_pattern_list: one negated match excludes the host whatever else matches.
  let matched = false;
  for (const pattern of entry.names.patterns) {
    if (pattern.startsWith('!')) {
      if (wildcardMatch(name, pattern.slice(1))) return false;
    } else if (wildcardMatch(name, pattern)) {
      matched = true;
    }
  }
  return matched;
}

/** OpenSSH match_pattern: `*` any run (empty too), `?` one character, the rest literal. */
function wildcardMatch(text: string, pattern: string): boolean {
  let t = 0;
  let p = 0;
  let starP = -1;
  let starT = 0;
  while (t < text.length) {
    const pc = pattern[p];
    if (pc === '*') {
      starP = p++;
      starT = t;
    } else if (pc !== undefined && (pc === '?' || pc === text[t])) {
      p++;
      t++;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else {
      return false;
    }
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

function hashName(name: string, salt: Buffer): Buffer {
  return createHmac('sha1', salt).update(name).digest();
}

/** Plain-key entries (not @cert-authority) that cover this host, in file order. */
export function entriesForHost(
  entries: readonly KnownHostEntry[],
  host: string,
  port: number,
): KnownHostEntry[] {
  return entries.filter((e) => e.marker !== 'cert-authority' && entryCoversHost(e, host, port));
}

/** Key types known (not revoked) for this host, in file order, without repeats. */
export function knownKeyTypes(
  entries: readonly KnownHostEntry[],
  host: string,
  port: number,
): string[] {
  const types = entriesForHost(entries, host, port)
    .filter((e) => e.marker === undefined)
    .map((e) => e.keyType);
  return [...new Set(types)];
}

/** Checks the key a server presented against the known_hosts entries. */
export function checkHostKey(
  entries: readonly KnownHostEntry[],
  host: string,
  port: number,
  keyType: string,
  keyBlob: Buffer,
): HostKeyVerdict {
  const relevant = entriesForHost(entries, host, port);
  if (relevant.some((e) => e.marker === 'revoked' && e.key.equals(keyBlob))) return 'mismatch';
  const sameType = relevant.filter((e) => e.marker === undefined && e.keyType === keyType);
  if (sameType.some((e) => e.key.equals(keyBlob))) return 'match';
  return sameType.length > 0 ? 'mismatch' : 'unknown';
}

export interface FormatKnownHostsOptions {
  /** Write the name as `|1|salt|hmac` like `ssh-keygen -H`. */
  readonly hashed?: boolean;
  /** The salt for a hashed name (20 bytes); random when absent. */
  readonly salt?: Buffer;
  readonly marker?: KnownHostMarker;
  readonly comment?: string;
}

/** One known_hosts line for this host, port and key (no trailing newline). */
export function formatKnownHostsLine(
  host: string,
  port: number,
  keyBlob: Buffer,
  options: FormatKnownHostsOptions = {},
): string {
  const keyType = keyTypeOf(keyBlob);
  if (keyType === undefined) throw new TypeError('not an SSH wire-format public key');
  const name = knownHostsName(host, port);
  let hostField = name;
  if (options.hashed === true) {
    const salt = options.salt ?? randomBytes(SHA1_LENGTH);
    hostField = `${HASH_MAGIC}${salt.toString('base64')}|${hashName(name, salt).toString('base64')}`;
  }
  const fields = [hostField, keyType, keyBlob.toString('base64')];
  if (options.marker !== undefined) fields.unshift(`@${options.marker}`);
  if (options.comment !== undefined) fields.push(options.comment);
  return fields.join(' ');
}
