import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkHostKey,
  formatKnownHostsLine,
  keyTypeOf,
  knownKeyTypes,
  parseKnownHosts,
} from '../../src/libvirt/transport/known-hosts.js';

const execFileAsync = promisify(execFile);

// A made-up SSH wire-format key: string type, then opaque bytes (enough for the reader).
function fakeKey(type: string, seed: number): Buffer {
  const name = Buffer.from(type, 'latin1');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(name.length);
  return Buffer.concat([len, name, Buffer.alloc(32, seed)]);
}

const ED_A = fakeKey('ssh-ed25519', 1);
const ED_B = fakeKey('ssh-ed25519', 2);
const RSA_A = fakeKey('ssh-rsa', 3);
const ECDSA_A = fakeKey('ecdsa-sha2-nistp256', 4);
const b64 = (key: Buffer): string => key.toString('base64');

describe('parseKnownHosts', () => {
  it('reads plain entries and skips comments, blank and broken lines', () => {
    const entries = parseKnownHosts(
      [
        '# a comment',
        '',
        `   host1,host2 ssh-ed25519 ${b64(ED_A)} someone@somewhere`,
        'broken-line-without-key',
        `host3 ssh-rsa ${b64(ED_A)}`, // declared type is not the key's own
        `host4 ssh-ed25519 not*base64`,
        `@unknown-marker host5 ssh-ed25519 ${b64(ED_A)}`,
        `[host6]:2222 ssh-rsa ${b64(RSA_A)}`,
      ].join('\n'),
    );
    expect(entries.map((e) => [e.line, e.keyType, e.names])).toEqual([
      [3, 'ssh-ed25519', { kind: 'patterns', patterns: ['host1', 'host2'] }],
      [8, 'ssh-rsa', { kind: 'patterns', patterns: ['[host6]:2222'] }],
    ]);
    expect(entries[0]?.key.equals(ED_A)).toBe(true);
  });

  it('reads markers', () => {
    const entries = parseKnownHosts(
      [
        `@revoked * ssh-ed25519 ${b64(ED_A)}`,
        `@cert-authority *.example ssh-ed25519 ${b64(ED_B)}`,
      ].join('\n'),
    );
    expect(entries.map((e) => e.marker)).toEqual(['revoked', 'cert-authority']);
  });
});

describe('checkHostKey', () => {
  const check = (file: string, host: string, port: number, key: Buffer): string =>
    checkHostKey(parseKnownHosts(file), host, port, keyTypeOf(key) ?? '', key);

  it('matches the same key, calls another key of the same type a mismatch', () => {
    const file = `server.example ssh-ed25519 ${b64(ED_A)}`;
    expect(check(file, 'server.example', 22, ED_A)).toBe('match');
    expect(check(file, 'SERVER.example', 22, ED_A)).toBe('match');
    expect(check(file, 'server.example', 22, ED_B)).toBe('mismatch');
  });

  it('calls a host unknown when no entry has the key type presented', () => {
    const file = `server.example ssh-ed25519 ${b64(ED_A)}`;
    expect(check(file, 'server.example', 22, RSA_A)).toBe('unknown');
    expect(check(file, 'other.example', 22, ED_A)).toBe('unknown');
    expect(check('', 'server.example', 22, ED_A)).toBe('unknown');
  });

  it('passes when any of several keys of the type matches', () => {
    const file = [
      `server.example ssh-ed25519 ${b64(ED_B)}`,
      `server.example ssh-ed25519 ${b64(ED_A)}`,
    ].join('\n');
    expect(check(file, 'server.example', 22, ED_A)).toBe('match');
  });

  it('names non-22 ports [host]:port, and a bare name covers port 22 only', () => {
    const file = [
      `[server.example]:2222 ssh-ed25519 ${b64(ED_A)}`,
      `server.example ssh-ed25519 ${b64(ED_B)}`,
    ].join('\n');
    expect(check(file, 'server.example', 2222, ED_A)).toBe('match');
    expect(check(file, 'server.example', 2222, ED_B)).toBe('mismatch');
    expect(check(file, 'server.example', 22, ED_B)).toBe('match');
    expect(check(file, 'server.example', 2223, ED_A)).toBe('unknown');
    expect(check(`[server.example]:22 ssh-ed25519 ${b64(ED_A)}`, 'server.example', 22, ED_A)).toBe(
      'unknown',
    );
  });

  it('supports * and ? wildcards, comma lists and negation', () => {
    const file = [
      `*.lab.example,!bad.lab.example ssh-ed25519 ${b64(ED_A)}`,
      `db?.example ssh-ed25519 ${b64(ED_A)}`,
    ].join('\n');
    expect(check(file, 'kvm1.lab.example', 22, ED_A)).toBe('match');
    expect(check(file, 'bad.lab.example', 22, ED_A)).toBe('unknown');
    expect(check(file, 'lab.example', 22, ED_A)).toBe('unknown');
    expect(check(file, 'db1.example', 22, ED_A)).toBe('match');
    expect(check(file, 'db12.example', 22, ED_A)).toBe('unknown');
    expect(check(`[10.0.0.*]:* ssh-ed25519 ${b64(ED_A)}`, '10.0.0.7', 2222, ED_A)).toBe('match');
    expect(check(`[10.0.0.*]:* ssh-ed25519 ${b64(ED_A)}`, '10.0.0.7', 22, ED_A)).toBe('unknown');
  });

  it('treats a revoked key as a mismatch even when it is also listed', () => {
    const file = [
      `server.example ssh-ed25519 ${b64(ED_A)}`,
      `@revoked * ssh-ed25519 ${b64(ED_A)}`,
    ].join('\n');
    expect(check(file, 'server.example', 22, ED_A)).toBe('mismatch');
    expect(check(`@revoked * ssh-ed25519 ${b64(ED_A)}`, 'server.example', 22, ED_B)).toBe(
      'unknown',
    );
  });

  it('ignores @cert-authority lines for plain host keys', () => {
    const file = `@cert-authority server.example ssh-ed25519 ${b64(ED_A)}`;
    expect(check(file, 'server.example', 22, ED_A)).toBe('unknown');
    expect(check(file, 'server.example', 22, ED_B)).toBe('unknown');
  });
});

describe('knownKeyTypes', () => {
  it('lists the key types known for a host in file order, revoked and other hosts left out', () => {
    const entries = parseKnownHosts(
      [
        `other ssh-rsa ${b64(RSA_A)}`,
        `[h]:2222 ecdsa-sha2-nistp256 ${b64(ECDSA_A)}`,
        `@revoked [h]:2222 ssh-rsa ${b64(RSA_A)}`,
        `[h]:2222 ssh-ed25519 ${b64(ED_A)}`,
        `[h]:2222 ssh-ed25519 ${b64(ED_B)}`,
      ].join('\n'),
    );
    expect(knownKeyTypes(entries, 'h', 2222)).toEqual(['ecdsa-sha2-nistp256', 'ssh-ed25519']);
  });
});

describe('formatKnownHostsLine', () => {
  it('writes plain and hashed lines that read back', () => {
    const plain = formatKnownHostsLine('Server.Example', 2222, ED_A, { comment: 'test' });
    expect(plain).toBe(`[server.example]:2222 ssh-ed25519 ${b64(ED_A)} test`);
    const hashed = formatKnownHostsLine('server.example', 2222, ED_A, { hashed: true });
    expect(hashed).toMatch(/^\|1\|[A-Za-z0-9+/=]{28}\|[A-Za-z0-9+/=]{28} ssh-ed25519 /);
    const revoked = formatKnownHostsLine('server.example', 22, ED_B, { marker: 'revoked' });
    expect(revoked.startsWith('@revoked server.example ')).toBe(true);
    expect(checkHostKey(parseKnownHosts(hashed), 'server.example', 2222, 'ssh-ed25519', ED_A)).toBe(
      'match',
    );
    expect(checkHostKey(parseKnownHosts(hashed), 'server.example', 2222, 'ssh-ed25519', ED_B)).toBe(
      'mismatch',
    );
    expect(checkHostKey(parseKnownHosts(hashed), 'server.example', 22, 'ssh-ed25519', ED_A)).toBe(
      'unknown',
    );
  });
});

describe('hashed entries written by ssh-keygen -H', () => {
  let dir: string;
  let realKey: Buffer;
  let hashedText: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-known-hosts-'));
    const keyPath = path.join(dir, 'hostkey');
    await execFileAsync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', keyPath]);
    const pub = (await readFile(`${keyPath}.pub`, 'utf8')).split(/\s+/);
    realKey = Buffer.from(pub[1] ?? '', 'base64');
    const file = path.join(dir, 'known_hosts');
    await writeFile(
      file,
      [
        `[127.0.0.1]:2222 ${pub[0]} ${pub[1]}`,
        `kvm.example,10.1.2.3 ${pub[0]} ${pub[1]}`,
        `[127.0.0.1]:2223 ssh-ed25519 ${b64(ED_B)}`,
        '',
      ].join('\n'),
    );
    await execFileAsync('ssh-keygen', ['-H', '-f', file]);
    hashedText = await readFile(file, 'utf8');
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('are hashed, one name per line', () => {
    const entries = parseKnownHosts(hashedText);
    expect(entries).toHaveLength(4); // the comma list became two lines
    expect(entries.every((e) => e.names.kind === 'hashed')).toBe(true);
    expect(hashedText).not.toContain('127.0.0.1');
  });

  it('match the host and port they were made for, and only those', () => {
    const entries = parseKnownHosts(hashedText);
    expect(checkHostKey(entries, '127.0.0.1', 2222, 'ssh-ed25519', realKey)).toBe('match');
    expect(checkHostKey(entries, 'kvm.example', 22, 'ssh-ed25519', realKey)).toBe('match');
    expect(checkHostKey(entries, '10.1.2.3', 22, 'ssh-ed25519', realKey)).toBe('match');
    expect(checkHostKey(entries, '127.0.0.1', 2223, 'ssh-ed25519', realKey)).toBe('mismatch');
    expect(checkHostKey(entries, '127.0.0.1', 22, 'ssh-ed25519', realKey)).toBe('unknown');
    expect(checkHostKey(entries, '127.0.0.2', 2222, 'ssh-ed25519', realKey)).toBe('unknown');
  });

  it('agree with ssh-keygen -F on lines we hash ourselves', async () => {
    const file = path.join(dir, 'ours');
    await writeFile(
      file,
      `${formatKnownHostsLine('kvm2.example', 2200, realKey, { hashed: true })}\n`,
    );
    const { stdout } = await execFileAsync('ssh-keygen', ['-F', '[kvm2.example]:2200', '-f', file]);
    expect(stdout).toContain('found: line 1');
    await expect(
      execFileAsync('ssh-keygen', ['-F', '[kvm2.example]:2201', '-f', file]),
    ).rejects.toThrow();
  });
});
