// URLs as kvm2 prints and logs them (docs/security.md): `kvm2 config check` in text and JSON,
// and the configuration's own error messages, never show an image URL's userinfo or signed
// query, nor a password in a libvirt or Redis URL.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../cli/run.js';
import type { CliIo } from '../../cli/terminal/io.js';
import { redactUrl } from '../../src/errors/redact-url.js';
import { issuesOf, uriMessage, withHost } from '../harness/config-input.js';

const TOKEN = 'tok-5f1e0c2a9b';
const SIGNATURE = 'sig-77a1c0de42';
const PASSWORD = 'pw-0d9c3b1a';
const SECRETS = [TOKEN, SIGNATURE, PASSWORD];

let dir: string;

function capture(): { io: CliIo; text: () => string } {
  const lines: string[] = [];
  const io: CliIo = {
    out: (...l) => void lines.push(...l),
    err: (...l) => void lines.push(...l),
    errRaw: (t) => void lines.push(t),
    stderrIsTTY: false,
    stderrColumns: 80,
    env: {},
  };
  return { io, text: () => lines.join('\n') };
}

async function configFile(name: string, text: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, text);
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-url-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('kvm2 config check', () => {
  const valid = [
    `redis: { url: 'redis://ops:${PASSWORD}@127.0.0.1:6379/2' }`,
    'hosts:',
    `  - { name: hv1, uri: 'qemu+ssh://kvm2@10.0.0.1/system', network: default }`,
    'images:',
    `  signed: { url: 'https://images.example/d.qcow2?X-Amz-Credential=AK&X-Amz-Signature=${SIGNATURE}' }`,
    `  basic: { url: 'https://deploy:${TOKEN}@images.example/u.qcow2' }`,
    `  token: { url: 'https://${TOKEN}@images.example/t.qcow2' }`,
  ].join('\n');

  it.each([[[]], [['--json']]])('prints no credential of any URL (%j)', async (flags) => {
    const file = await configFile('valid.yaml', valid);
    const out = capture();
    expect(await runCli(['config', 'check', '--config', file, ...flags], out.io)).toBe(0);
    const text = out.text();
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    // What an operator needs stays: the server, the path, the query's names, the SSH user.
    expect(text).toContain('images.example/d.qcow2?X-Amz-Credential=***&X-Amz-Signature=***');
    expect(text).toContain('https://***:***@images.example/u.qcow2');
    expect(text).toContain('qemu+ssh://kvm2@10.0.0.1/system');
  });

  it('names the bad URL in an error without its credentials', async () => {
    const file = await configFile(
      'bad.yaml',
      [
        'hosts:',
        `  - { name: hv1, uri: 'qemu+tls://root:${PASSWORD}@hv1/system', network: default }`,
        'images:',
        `  x: { url: 'ftp://deploy:${TOKEN}@images.example/x?sig=${SIGNATURE}' }`,
      ].join('\n'),
    );
    for (const flags of [[], ['--json']]) {
      const out = capture();
      expect(await runCli(['config', 'check', '--config', file, ...flags], out.io)).toBe(1);
      const text = out.text();
      for (const secret of SECRETS) expect(text).not.toContain(secret);
      expect(text).toContain('kvm2.hosts[0].uri');
      expect(text).toContain('kvm2.images.x.url');
    }
  });
});

describe('messages that quote a URL', () => {
  it('a libvirt URI refused for any reason', () => {
    for (const uri of [
      `qemu+tls://root:${PASSWORD}@hv1/system`,
      `qemu+ssh://root:${PASSWORD}@hv1/system?bogus=1`,
      `qemu+ssh://root:${PASSWORD}@hv1/system?no_verify=1`,
      `qemu+ssh://root:${PASSWORD}@hv1/system`, // a password is never used, so refused
      `xen+ssh://root:${PASSWORD}@hv1/system`,
    ]) {
      const message = uriMessage(uri);
      expect(message).not.toContain(PASSWORD);
      expect(message).toContain('root:***@hv1');
    }
  });

  it('an image URL the configuration refuses', () => {
    const issues = issuesOf(
      withHost({ images: { x: { url: `ftp://u:${TOKEN}@h/x?s=${SIGNATURE}` } } }),
    );
    expect(issues.join('\n')).not.toMatch(new RegExp(`${TOKEN}|${SIGNATURE}`));
    expect(issues.join('\n')).toContain('ftp://***:***@h/x?s=***');
  });
});

describe('redactUrl', () => {
  it.each([
    ['https://u:p@h/a?x=1&y', 'https://***:***@h/a?x=***&y'],
    ['https://tok@h/a', 'https://***@h/a'],
    ['redis://:p@127.0.0.1:6379/2', 'redis://:***@127.0.0.1:6379/2'],
    ['qemu+ssh://kvm2@h1/system?keyfile=/k', 'qemu+ssh://kvm2@h1/system?keyfile=/k'],
    ['qemu:///system', 'qemu:///system'],
    ['https://h/a#frag', 'https://h/a#***'],
    // An unencoded '#' in a password: the rest of the URL, password included, is the fragment.
    ['redis://kvm2:4242#Tr0ub4dor@redis.internal:6379', 'redis://kvm2:4242#***'],
    ['no url here', 'no url here'],
    ['htt p://u:p@h', '***'],
  ])('%s -> %s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });
});
