import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utils } from 'ssh2';
import YAML from 'yaml';
import {
  ConfigError,
  hostTargets,
  loadConfig,
  parseConfig,
  parseConfigText,
} from '../../src/provider/config/load.js';
import { EMBEDDED_DEFAULT } from '../../src/provider/config/schema.js';
import { configWarnings } from '../../src/provider/config/warnings.js';
import { parseDuration, parseSize } from '../../src/provider/config/values.js';
import { local, withHost } from '../harness/config-input.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-config-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the embedded default', () => {
  it('serves one local host, pool and network default, the demo image, a local Redis', async () => {
    const config = await loadConfig({ env: {} });
    expect(config.hosts).toEqual([
      {
        name: 'local',
        uri: 'qemu:///system',
        pool: 'default',
        network: 'default',
        concurrency: 4,
        domainType: 'qemu',
        firmware: 'uefi',
        cpuMode: 'none',
        serialLogDir: '/var/log/libvirt/qemu',
        poolReserve: 2 ** 30,
      },
    ]);
    expect(config.redis).toEqual({ url: 'redis://127.0.0.1:6379', prefix: '{kvm2}' });
    expect(config.images).toEqual({
      demo: {
        url: 'file:///var/lib/kvm2/images/demo.qcow2',
        format: 'qcow2',
        maxSize: 20 * 2 ** 30,
        vendorData: [],
      },
    });
    expect(config.defaults).toEqual({
      vcpus: 1,
      memoryMiB: 1024,
      diskGiB: 10,
      addressTimeout: 300_000,
    });
    expect(config.health).toEqual({
      every: 60_000,
      timeout: 20_000,
      poolLowSpaceBytes: 10 * 2 ** 30,
    });
    expect(config.board).toEqual({
      listen: { host: '127.0.0.1', port: 3000 },
      readOnly: false,
      allowedHosts: [],
    });
  });

  it('is used when KVM2_CONFIG is empty', async () => {
    expect(await loadConfig({ env: { KVM2_CONFIG: '' } })).toEqual(parseConfig(EMBEDDED_DEFAULT));
  });
});

describe('loading files', () => {
  const yamlText = [
    'redis:',
    '  url: rediss://:secret@redis.internal:6380/2',
    'hosts:',
    '  - name: hv1',
    '    uri: qemu+ssh://kvm2@hv1.internal/system?keyfile=/etc/kvm2/id&known_hosts=/etc/kvm2/kh',
    '    bridge: br0',
    '    domainType: qemu',
    'images:',
    '  debian-12:',
    '    url: https://images.internal/debian-12.qcow2',
    `    sha256: ${'AB'.repeat(32)}`,
    'health:',
    '  every: 2m',
    '',
  ].join('\n');

  it('reads YAML from KVM2_CONFIG', async () => {
    const file = path.join(dir, 'config.yaml');
    await writeFile(file, yamlText);
    const config = await loadConfig({ env: { KVM2_CONFIG: file } });
    expect(config.redis.url).toBe('rediss://:secret@redis.internal:6380/2');
    expect(config.hosts[0]).toMatchObject({ name: 'hv1', bridge: 'br0', cpuMode: 'none' });
    expect(config.images['debian-12']).toEqual({
      url: 'https://images.internal/debian-12.qcow2',
      sha256: 'ab'.repeat(32),
      format: 'qcow2',
      maxSize: 20 * 2 ** 30,
      vendorData: [],
    });
    expect(config.health.every).toBe(120_000);
  });

  it('reads JSON, and --config wins over KVM2_CONFIG', async () => {
    const file = path.join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ hosts: [local], defaults: { vcpus: 4 } }));
    const config = await loadConfig({ file, env: { KVM2_CONFIG: path.join(dir, 'nope.yaml') } });
    expect(config.hosts.map((h) => h.name)).toEqual(['hv1']);
    expect(config.defaults.vcpus).toBe(4);
  });

  it('tells JSON from YAML by content when the name does not say', async () => {
    const asJson = path.join(dir, 'kvm2.conf');
    await writeFile(asJson, `  {"hosts": [${JSON.stringify(local)}], "board": {"readOnly": true}}`);
    expect((await loadConfig({ file: asJson })).board.readOnly).toBe(true);
    const asYaml = path.join(dir, 'kvm2.yml');
    await writeFile(asYaml, YAML.stringify({ hosts: [local] }));
    expect((await loadConfig({ file: asYaml })).hosts).toHaveLength(1);
  });

  it('names a file it cannot read', async () => {
    const file = path.join(dir, 'missing.yaml');
    await expect(loadConfig({ file })).rejects.toThrow(
      `invalid configuration in ${file}: kvm2: cannot read the configuration file (ENOENT)`,
    );
  });

  it.each([
    ['broken YAML', 'hosts: [\n', 'yaml', /^kvm2: not valid YAML at line \d+, column \d+: /],
    [
      'broken JSON',
      '{"hosts": [}',
      'json',
      /^kvm2: not valid JSON at line 1, column 12: expected a value \(/,
    ],
    ['a YAML key given twice', 'hosts: []\nhosts: []\n', 'yaml', /a key is given twice/],
    ['a JSON key given twice', '{"hosts": [], "hosts": []}', 'json', /a key is given twice/],
    ['an empty file', '', 'yaml', /^kvm2: expected a mapping at the top level, got nothing$/],
    ['a list', '- 1\n', 'yaml', /^kvm2: expected a mapping at the top level, got a list$/],
  ] as const)('refuses %s', (_what, text, format, message) => {
    const err = (() => {
      try {
        parseConfigText(text, { format });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('accepted');
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]).toMatch(message);
  });
});

describe('values', () => {
  it.each<[unknown, number]>([
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    ['1.5s', 1500],
    [1500, 1500],
  ])('reads the duration %j as %d ms', (value, ms) => {
    expect(parseDuration(value)).toBe(ms);
    expect(
      parseConfig(withHost({ worker: { shutdownTimeout: value } })).worker.shutdownTimeout,
    ).toBe(ms);
  });

  it.each<[unknown, number]>([
    ['10GiB', 10 * 2 ** 30],
    ['500MB', 500e6],
    ['1TiB', 2 ** 40],
    [4096, 4096],
    ['4096', 4096],
  ])('reads the size %j as %d bytes', (value, bytes) => {
    expect(parseSize(value)).toBe(bytes);
    expect(
      parseConfig(withHost({ health: { poolLowSpaceBytes: value } })).health.poolLowSpaceBytes,
    ).toBe(bytes);
  });

  it("reads serialLogDir: libvirt's qemu log directory by default, a directory, or none", () => {
    const config = parseConfig({
      hosts: [
        { ...local, name: 'a', uri: 'qemu+ssh://root@a.example/system' },
        {
          ...local,
          name: 'b',
          uri: 'qemu+ssh://root@b.example/system',
          serialLogDir: '/srv/guest-logs/',
        },
        { ...local, name: 'c', uri: 'qemu+ssh://root@c.example/system', serialLogDir: 'none' },
      ],
    });
    expect(config.hosts.map((h) => h.serialLogDir)).toEqual([
      '/var/log/libvirt/qemu',
      '/srv/guest-logs',
      null,
    ]);
  });

  it('defaults cpuMode by domainType and keeps an explicit one', () => {
    const config = parseConfig({
      hosts: [
        { ...local, name: 'a', uri: 'qemu+ssh://root@a.example/system' },
        { ...local, name: 'b', uri: 'qemu+ssh://root@b.example/system', domainType: 'qemu' },
        {
          ...local,
          name: 'c',
          uri: 'qemu+ssh://root@c.example/system',
          domainType: 'qemu',
          cpuMode: 'host-model',
        },
        { ...local, name: 'd', uri: 'qemu+ssh://root@d.example/system', cpuMode: 'none' },
      ],
    });
    expect(config.hosts.map((h) => h.cpuMode)).toEqual([
      'host-passthrough',
      'none',
      'host-model',
      'none',
    ]);
  });

  it.each(['127.0.0.1:3000', '127.8.9.10:80', '[::1]:3000', 'localhost:0'])(
    'lets the board listen on loopback %s without auth',
    (listen) => {
      expect(() => parseConfig(withHost({ board: { listen } }))).not.toThrow();
    },
  );

  it('lets the board listen beyond loopback with auth', () => {
    const config = parseConfig(
      withHost({ board: { listen: '0.0.0.0:3000', auth: { username: 'ops', password: 'pw' } } }),
    );
    expect(config.board.listen).toEqual({ host: '0.0.0.0', port: 3000 });
  });
});

describe('redis.sentinel', () => {
  it('takes a Sentinel group instead of a URL, with its nodes parsed', () => {
    const config = parseConfig(
      withHost({
        redis: {
          sentinel: {
            name: 'kvm2-master',
            nodes: ['10.0.0.5:26379', '[::1]:26380'],
            password: 'p',
          },
        },
      }),
    );
    expect(config.redis.url).toBeUndefined();
    expect(config.redis.sentinel).toEqual({
      name: 'kvm2-master',
      nodes: [
        { host: '10.0.0.5', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      password: 'p',
      tls: false,
      db: 0,
      confirmReplicas: 1,
      confirmTimeout: 1_000,
    });
    expect(config.redis.prefix).toBe('{kvm2}');
  });
});

describe('redis.cluster', () => {
  it('takes Cluster nodes instead of a URL, with the default hash-tagged prefix or one given', () => {
    const config = parseConfig(
      withHost({ redis: { cluster: { nodes: ['10.0.0.5:7000', '10.0.0.6:7000'] } } }),
    );
    expect(config.redis.url).toBeUndefined();
    expect(config.redis.cluster).toEqual({
      nodes: [
        { host: '10.0.0.5', port: 7000 },
        { host: '10.0.0.6', port: 7000 },
      ],
      tls: false,
    });
    expect(config.redis.prefix).toBe('{kvm2}');
    const tagged = parseConfig(
      withHost({ redis: { cluster: { nodes: ['10.0.0.5:7000'] }, prefix: 'prod{kvm2}' } }),
    );
    expect(tagged.redis.prefix).toBe('prod{kvm2}');
  });
});

describe('local image files', () => {
  it('takes a file:/// URL or an absolute path, and writes both as the same file URL', () => {
    const config = parseConfig(
      withHost({
        images: {
          a: { url: '/srv/images/golden 1.qcow2' },
          b: { url: 'file:///srv/images/golden%201.qcow2' },
          c: { url: 'file://localhost/srv/images/golden%201.qcow2' },
          d: { url: 'https://x/y' },
        },
      }),
    );
    const want = 'file:///srv/images/golden%201.qcow2';
    expect([config.images['a']?.url, config.images['b']?.url, config.images['c']?.url]).toEqual([
      want,
      want,
      want,
    ]);
    expect(config.images['d']?.url).toBe('https://x/y');
  });
});

describe('the parsed configuration', () => {
  it('is frozen all the way down', () => {
    const config = parseConfig(withHost({ images: { deb: { url: 'https://x/y' } } }));
    const check = (value: unknown, where: string): void => {
      if (typeof value !== 'object' || value === null) return;
      expect(Object.isFrozen(value), where).toBe(true);
      for (const [k, v] of Object.entries(value)) check(v, `${where}.${k}`);
    };
    check(config, 'kvm2');
    expect(() => {
      (config.hosts[0] as { concurrency: number }).concurrency = 99;
    }).toThrow(TypeError);
    expect(() => {
      (config.hosts as unknown[]).push({});
    }).toThrow(TypeError);
  });

  it('gives HostTable its targets without dialing', () => {
    const config = parseConfig({
      hosts: [
        local,
        {
          name: 'hv2',
          uri: 'qemu+ssh://kvm2@hv2.internal:2222/system?keyfile=/k&known_hosts=/kh',
          network: 'default',
        },
      ],
    });
    const targets = hostTargets(config);
    expect(targets.map(([name]) => name)).toEqual(['hv1', 'hv2']);
    expect(targets[1]?.[1]).toMatchObject({
      transport: 'ssh',
      openName: 'qemu:///system',
      ssh: { host: 'hv2.internal', port: 2222, user: 'kvm2', keyFile: '/k', knownHostsFile: '/kh' },
    });
  });
});

describe('configWarnings', () => {
  it('warns of key and known_hosts files that cannot be read, and of nothing else', async () => {
    const key = path.join(dir, 'id_ed25519');
    const knownHosts = path.join(dir, 'known_hosts');
    const aDirectory = path.join(dir, 'not-a-file');
    await writeFile(key, utils.generateKeyPairSync('ed25519').private, { mode: 0o600 });
    await writeFile(knownHosts, 'hv1 ssh-ed25519 AAAA');
    await mkdir(aDirectory, { recursive: true });
    const missing = path.join(dir, 'missing-key');
    const config = parseConfig({
      hosts: [
        local,
        {
          name: 'good',
          uri: `qemu+ssh://u@good/system?keyfile=${key}&known_hosts=${knownHosts}`,
          network: 'n',
        },
        {
          name: 'bad',
          uri: `qemu+ssh://u@bad/system?keyfile=${missing}&known_hosts=${aDirectory}`,
          network: 'n',
        },
      ],
    });
    expect(configWarnings(config)).toEqual([
      `kvm2.hosts[2].uri: keyfile ${missing} cannot be read (ENOENT); dials to bad fail until it can (it is read again at every dial)`,
      `kvm2.hosts[2].uri: known_hosts ${aDirectory} cannot be read (not a regular file); dials to bad fail until it can (it is read again at every dial)`,
    ]);
  });

  it("warns of a board password that is the example's placeholder or short, never showing it", () => {
    const withPassword = (password: string) =>
      configWarnings(
        parseConfig({
          hosts: [local],
          board: { listen: '0.0.0.0:3000', auth: { username: 'ops', password } },
        }),
      );
    expect(withPassword('change-me')).toEqual([
      "kvm2.board.auth.password: is deploy/config.example.yaml's placeholder: anyone who reads that file can use the board; set a password of your own",
    ]);
    expect(withPassword('hunter2')).toEqual([
      'kvm2.board.auth.password: has 7 characters: a password of 16 or more (openssl rand -base64 18) keeps guessing out',
    ]);
    expect(withPassword('x'.repeat(16))).toEqual([]);
    expect(withPassword('hunter2').join('\n')).not.toContain('hunter2');
  });

  it('warns of a key under a passphrase, one that is no key, and one others can read', async () => {
    const secret = 'pw-for-the-key';
    const files = {
      locked: utils.generateKeyPairSync('ed25519', {
        passphrase: secret,
        cipher: 'aes256-cbc',
        rounds: 16,
      }).private,
      garbage: 'not a key at all',
      open: utils.generateKeyPairSync('ed25519').private,
    };
    await writeFile(path.join(dir, 'known_hosts'), 'hv1 ssh-ed25519 AAAA');
    const hosts = await Promise.all(
      Object.entries(files).map(async ([name, text]) => {
        const file = path.join(dir, `key-${name}`);
        await writeFile(file, text, { mode: name === 'open' ? 0o644 : 0o600 });
        await chmod(file, name === 'open' ? 0o644 : 0o600); // whatever the umask
        const knownHosts = path.join(dir, 'known_hosts');
        const uri = `qemu+ssh://u@${name}/system?keyfile=${file}&known_hosts=${knownHosts}`;
        return { name, uri, network: 'n' };
      }),
    );
    const warnings = configWarnings(parseConfig({ hosts }));
    const keyOf = (name: string): string => path.join(dir, `key-${name}`);
    expect(warnings).toEqual([
      `kvm2.hosts[0].uri: keyfile ${keyOf('locked')} holds no usable private key (passphrase-protected keys are not supported); dials to locked fail until it does (it is read again at every dial)`,
      `kvm2.hosts[1].uri: keyfile ${keyOf('garbage')} holds no usable private key (passphrase-protected keys are not supported); dials to garbage fail until it does (it is read again at every dial)`,
      `kvm2.hosts[2].uri: keyfile ${keyOf('open')} can be read by others (mode 0644); ssh(1) would refuse it: chmod 600 ${keyOf('open')}`,
    ]);
    expect(warnings.join('\n')).not.toContain('PRIVATE KEY');
  });

  it('has nothing to say about the embedded default', async () => {
    expect(configWarnings(await loadConfig({ env: {} }))).toEqual([]);
  });
});

describe('docs/configuration.md', () => {
  const docPromise = readFile(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
  const yamlBlocks = async (): Promise<string[]> =>
    [...(await docPromise).matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');

  it('has an example that validates: a two-host SSH fleet', async () => {
    const [example] = await yamlBlocks();
    const config = parseConfigText(example ?? '', { format: 'yaml' });
    expect(config.hosts).toHaveLength(2);
    expect(config.hosts.every((h) => h.uri.startsWith('qemu+ssh://'))).toBe(true);
  });

  it('shows the embedded default as it is', async () => {
    const blocks = await yamlBlocks();
    expect(YAML.parse(blocks.at(-1) ?? '')).toEqual(EMBEDDED_DEFAULT);
  });

  it('names every key', async () => {
    const doc = await docPromise;
    const [example] = await yamlBlocks();
    const config = parseConfigText(example ?? '', { format: 'yaml' });
    const keys = new Set<string>();
    // Keys of objects; not list indexes, not image names (the keys of `images`).
    const walk = (value: unknown): void => {
      if (typeof value !== 'object' || value === null) return;
      for (const [k, v] of Object.entries(value)) {
        if (!Array.isArray(value) && value !== config.images) keys.add(k);
        walk(v);
      }
    };
    walk(config);
    keys.delete('host'); // board.listen's parsed form
    keys.delete('port');
    for (const key of keys)
      expect(doc, key).toMatch(new RegExp(`\`(auth\\.)?${key}(\\[\\]|\\{\\})?\``));
  });
});
