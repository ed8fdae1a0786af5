import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { parseLibvirtUri } from '../../src/libvirt/transport/uri.js';
import {
  ConfigError,
  configWarnings,
  hostTargets,
  loadConfig,
  parseConfig,
  parseConfigText,
} from '../../src/provider/config/load.js';
import { EMBEDDED_DEFAULT } from '../../src/provider/config/schema.js';
import { parseDuration, parseSize } from '../../src/provider/config/values.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-config-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const local = { name: 'hv1', uri: 'qemu:///system', network: 'default' };

/** The issue lines of the ConfigError that parsing `input` throws. */
function issuesOf(input: unknown): readonly string[] {
  try {
    parseConfig(input);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues;
  }
  throw new Error('expected the configuration to be refused');
}

/** A configuration with one host and `patch` merged at the top. */
const withHost = (patch: Record<string, unknown> = {}, host: Record<string, unknown> = {}) => ({
  hosts: [{ ...local, ...host }],
  ...patch,
});

function uriMessage(uri: string): string {
  try {
    parseLibvirtUri(uri);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${uri} parses`);
}

describe('the embedded default', () => {
  it('serves one local host, pool and network default, a local Redis', async () => {
    const config = await loadConfig({ env: {} });
    expect(config.hosts).toEqual([
      {
        name: 'local',
        uri: 'qemu:///system',
        pool: 'default',
        network: 'default',
        concurrency: 4,
        domainType: 'kvm',
        firmware: 'uefi',
        cpuMode: 'host-passthrough',
        serialLogDir: '/var/log/libvirt/qemu',
      },
    ]);
    expect(config.redis).toEqual({ url: 'redis://127.0.0.1:6379', prefix: '{kvm2}' });
    expect(config.images).toEqual({});
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
    expect(config.board).toEqual({ listen: { host: '127.0.0.1', port: 3000 }, readOnly: false });
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
    ['broken JSON', '{"hosts": [}', 'json', /^kvm2: not valid JSON: /],
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

describe('errors name their path', () => {
  it.each<[string, unknown, string]>([
    ['no hosts key', {}, 'kvm2.hosts: required'],
    ['an empty host list', { hosts: [] }, 'kvm2.hosts: at least one host is required'],
    [
      'an unknown top-level key',
      withHost({ helth: {} }),
      "kvm2.helth: unknown key (did you mean 'health'?)",
    ],
    [
      'an unknown host key',
      withHost({}, { netwrok: 'x' }),
      "kvm2.hosts[0].netwrok: unknown key (did you mean 'network'?)",
    ],
    [
      'an unknown key far from any known one',
      withHost({ board: { auth: { username: 'a', password: 'b', totp: '1' } } }),
      'kvm2.board.auth.totp: unknown key',
    ],
    [
      'an unknown image key',
      withHost({ images: { deb: { url: 'https://x/y', sha: 'x' } } }),
      "kvm2.images.deb.sha: unknown key (did you mean 'sha256'?)",
    ],
    [
      'a duplicate host name',
      { hosts: [local, { ...local, uri: 'test:///default' }] },
      "kvm2.hosts[1].name: duplicate host name 'hv1' (also hosts[0])",
    ],
    [
      'an image without url',
      withHost({ images: { 'debian-12': { format: 'raw' } } }),
      'kvm2.images.debian-12.url: required',
    ],
    [
      'an image url that is not http(s)',
      withHost({ images: { deb: { url: 'ftp://x/y' } } }),
      'kvm2.images.deb.url: must be an http:// or https:// URL, got "ftp://x/y"',
    ],
    [
      'an image name that is not a DNS label',
      withHost({ images: { Debian_12: { url: 'https://x/y' } } }),
      'kvm2.images.Debian_12: image name must be a DNS label (lowercase letters, digits and dashes, 1 to 63, not starting or ending with a dash)',
    ],
    [
      'an image sha256 that is not 64 hex',
      withHost({ images: { deb: { url: 'https://x/y', sha256: 'abc' } } }),
      'kvm2.images.deb.sha256: must be 64 hex digits',
    ],
    [
      'an image format other than qcow2 or raw',
      withHost({ images: { deb: { url: 'https://x/y', format: 'vmdk' } } }),
      'kvm2.images.deb.format: Invalid option: expected one of "qcow2"|"raw"',
    ],
    [
      'a host name that is not a DNS label',
      withHost({}, { name: 'HV_1' }),
      'kvm2.hosts[0].name: host name must be a DNS label (lowercase letters, digits and dashes, 1 to 63, not starting or ending with a dash)',
    ],
    [
      'a zone that is not a DNS label',
      withHost({}, { zone: 'rack a' }),
      'kvm2.hosts[0].zone: zone must be a DNS label (lowercase letters, digits and dashes, 1 to 63, not starting or ending with a dash)',
    ],
    [
      'both network and bridge',
      withHost({}, { bridge: 'br0' }),
      'kvm2.hosts[0].bridge: set network or bridge, not both',
    ],
    [
      'neither network nor bridge',
      { hosts: [{ name: 'hv1', uri: 'qemu:///system' }] },
      'kvm2.hosts[0]: set network (a libvirt network) or bridge (a host bridge)',
    ],
    [
      'host-passthrough on a qemu (TCG) host',
      withHost({}, { domainType: 'qemu', cpuMode: 'host-passthrough' }),
      "kvm2.hosts[0].cpuMode: host-passthrough needs domainType 'kvm'; plain qemu (TCG) cannot pass the host CPU through",
    ],
    [
      'a relative serialLogDir',
      withHost({}, { serialLogDir: 'log/qemu' }),
      "kvm2.hosts[0].serialLogDir: must be an absolute directory on the host (no '..') or 'none'",
    ],
    [
      'a serialLogDir that climbs out',
      withHost({}, { serialLogDir: '/var/log/../../etc' }),
      "kvm2.hosts[0].serialLogDir: must be an absolute directory on the host (no '..') or 'none'",
    ],
    [
      'a zero concurrency',
      withHost({}, { concurrency: 0 }),
      'kvm2.hosts[0].concurrency: must be positive',
    ],
    [
      'a fractional concurrency',
      withHost({}, { concurrency: 1.5 }),
      'kvm2.hosts[0].concurrency: must be a whole number',
    ],
    [
      'negative vcpus',
      withHost({ defaults: { vcpus: -1 } }),
      'kvm2.defaults.vcpus: must be positive',
    ],
    [
      'zero memory',
      withHost({ defaults: { memoryMiB: 0 } }),
      'kvm2.defaults.memoryMiB: must be positive',
    ],
    [
      'a zero disk',
      withHost({ defaults: { diskGiB: 0 } }),
      'kvm2.defaults.diskGiB: must be positive',
    ],
    [
      'a zero pool threshold',
      withHost({ health: { poolLowSpaceBytes: '0GiB' } }),
      'kvm2.health.poolLowSpaceBytes: must be positive',
    ],
    [
      'a size without a known unit',
      withHost({ health: { poolLowSpaceBytes: '10 gigs' } }),
      `kvm2.health.poolLowSpaceBytes: expected a size like '10GiB', '500MB' or a number of bytes, got "10 gigs"`,
    ],
    [
      'a duration in words',
      withHost({ defaults: { addressTimeout: '5 minutes' } }),
      `kvm2.defaults.addressTimeout: expected a duration like '30s', '5m', '1h' or a number of milliseconds, got "5 minutes"`,
    ],
    [
      'a zero duration',
      withHost({ health: { every: 0 } }),
      'kvm2.health.every: must be positive and at most 24 days (2^31-1 ms)',
    ],
    [
      'a duration past what a timer can hold',
      withHost({ health: { every: '25d' } }),
      'kvm2.health.every: must be positive and at most 24 days (2^31-1 ms)',
    ],
    [
      'a health round longer than its schedule',
      withHost({ health: { every: '10s', timeout: '30s' } }),
      'kvm2.health.timeout: must not exceed health.every (rounds would overlap)',
    ],
    [
      'a board on all interfaces without auth',
      withHost({ board: { listen: '0.0.0.0:3000' } }),
      'kvm2.board.auth: required: board.listen 0.0.0.0:3000 is reachable beyond loopback',
    ],
    [
      'a board on all IPv6 interfaces without auth',
      withHost({ board: { listen: '[::]:8080' } }),
      'kvm2.board.auth: required: board.listen :::8080 is reachable beyond loopback',
    ],
    [
      'a board listen address without a port',
      withHost({ board: { listen: 'localhost' } }),
      'kvm2.board.listen: expected host:port (e.g. 127.0.0.1:3000, [::1]:3000, 0.0.0.0:3000), got "localhost"',
    ],
    [
      'a redis url of another scheme',
      withHost({ redis: { url: 'http://redis:6379' } }),
      'kvm2.redis.url: must be a redis:// or rediss:// URL with a host',
    ],
    [
      'a number where a string belongs (unquoted in YAML)',
      withHost({ board: { auth: { username: 'ops', password: 12345 } } }),
      'kvm2.board.auth.password: Invalid input: expected string, received number (quote it in YAML)',
    ],
    [
      'a string where a number belongs',
      withHost({ defaults: { vcpus: '2' } }),
      'kvm2.defaults.vcpus: Invalid input: expected number, received string',
    ],
  ])('%s', (_what, input, issue) => {
    expect(issuesOf(input)).toEqual([issue]);
  });

  it.each([
    ['a driver kvm2 does not speak', 'xen:///system'],
    ['the TLS transport', 'qemu+tls://hv2/system'],
    ['a relative key file', 'qemu+ssh://root@hv2/system?keyfile=id_ed25519'],
    ['no_verify', 'qemu+ssh://root@hv2/system?no_verify=1'],
    ['an unknown parameter', 'qemu+ssh://root@hv2/system?keyfil=/k'],
    ['not a URI at all', 'hv2'],
  ])("reports parseLibvirtUri's message for %s under the host's uri", (_what, uri) => {
    const input = { hosts: [local, { name: 'hv2', uri, network: 'default' }] };
    expect(issuesOf(input)).toEqual([`kvm2.hosts[1].uri: ${uriMessage(uri)}`]);
  });

  it('reports every problem at once', () => {
    const issues = issuesOf({
      hosts: [
        { ...local, concurrency: 0 },
        { ...local, uri: 'xen:///' },
      ],
      images: { deb: {} },
      board: { listen: '0.0.0.0:1' },
    });
    expect(issues).toEqual(
      expect.arrayContaining([
        'kvm2.hosts[0].concurrency: must be positive',
        `kvm2.hosts[1].uri: ${uriMessage('xen:///')}`,
        "kvm2.hosts[1].name: duplicate host name 'hv1' (also hosts[0])",
        'kvm2.images.deb.url: required',
        'kvm2.board.auth: required: board.listen 0.0.0.0:1 is reachable beyond loopback',
      ]),
    );
    expect(issues).toHaveLength(5);
  });

  it('never echoes a redis password', () => {
    const issues = issuesOf(withHost({ redis: { url: 'http://:hunter2@redis:6379' } }));
    expect(issues.join('\n')).not.toContain('hunter2');
  });

  it('is a permanent ERR_CONFIG whose message holds every issue', () => {
    try {
      parseConfig({ hosts: [{ ...local, pool: '' }], defaults: { vcpus: 0 } });
    } catch (err) {
      expect(err).toMatchObject({ code: 'ERR_CONFIG', kind: 'permanent' });
      expect((err as Error).message).toBe(
        'invalid configuration:\n  kvm2.hosts[0].pool: must be a name without slashes or whitespace, not empty\n  kvm2.defaults.vcpus: must be positive',
      );
      return;
    }
    throw new Error('accepted');
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
      parseConfig(withHost({ defaults: { addressTimeout: value } })).defaults.addressTimeout,
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
        { ...local, name: 'a' },
        { ...local, name: 'b', serialLogDir: '/srv/guest-logs/' },
        { ...local, name: 'c', serialLogDir: 'none' },
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
        { ...local, name: 'a' },
        { ...local, name: 'b', domainType: 'qemu' },
        { ...local, name: 'c', domainType: 'qemu', cpuMode: 'host-model' },
        { ...local, name: 'd', cpuMode: 'none' },
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
    await writeFile(key, 'key');
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
