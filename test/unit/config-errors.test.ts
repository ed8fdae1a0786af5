// The configuration's refusals (SPEC §2): every issue names its `kvm2.` path and says what was
// wrong, and never echoes a secret.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, parseConfigText } from '../../src/provider/config/load.js';
import { issuesOf, local, uriMessage, withHost } from '../harness/config-input.js';

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
      'two hosts with one libvirt URI',
      { hosts: [local, { ...local, name: 'hv2' }] },
      "kvm2.hosts[1].uri: host 'hv2' reaches the same libvirt daemon as host 'hv1' (hosts[0]): its domains would be listed, and deleted, twice",
    ],
    [
      'two spellings of one ssh endpoint (the default port written out, other parameters)',
      {
        hosts: [
          { ...local, uri: 'qemu+ssh://root@hv.example/system' },
          { ...local, name: 'b', uri: 'qemu+ssh://root@HV.example:22/system?keyfile=/k' },
        ],
      },
      "kvm2.hosts[1].uri: host 'b' reaches the same libvirt daemon as host 'hv1' (hosts[0]): its domains would be listed, and deleted, twice",
    ],
    [
      'two spellings of the local daemon',
      { hosts: [local, { ...local, name: 'b', uri: 'qemu+unix:///system' }] },
      "kvm2.hosts[1].uri: host 'b' reaches the same libvirt daemon as host 'hv1' (hosts[0]): its domains would be listed, and deleted, twice",
    ],
    [
      'one socket under /var/run and under /run',
      {
        hosts: [
          { ...local, uri: 'qemu:///system?socket=/var/run/libvirt/libvirt-sock' },
          { ...local, name: 'b', uri: 'qemu:///system?socket=/run/libvirt/libvirt-sock' },
        ],
      },
      "kvm2.hosts[1].uri: host 'b' reaches the same libvirt daemon as host 'hv1' (hosts[0]): its domains would be listed, and deleted, twice",
    ],
    [
      'a vendor-data part whose type is not a MIME type',
      withHost({
        images: {
          deb: { url: 'https://x/y', vendorData: [{ contentType: 'cloud', content: '' }] },
        },
      }),
      'kvm2.images.deb.vendorData[0].contentType: "cloud" is not a MIME type',
    ],
    [
      'a vendor-data part whose file name is a path',
      withHost({
        images: {
          deb: {
            url: 'https://x/y',
            vendorData: [
              { contentType: 'text/cloud-config', content: '#cloud-config\n' },
              { contentType: 'text/x-shellscript', content: '#!/bin/sh\n', filename: '../x.sh' },
            ],
          },
        },
      }),
      'kvm2.images.deb.vendorData[1].filename: "../x.sh" is not 1..64 characters of [A-Za-z0-9._-]',
    ],
    [
      'a vendor-data part without content',
      withHost({
        images: { deb: { url: 'https://x/y', vendorData: [{ contentType: 'text/cloud-config' }] } },
      }),
      'kvm2.images.deb.vendorData[0].content: required',
    ],
    [
      'an image without url',
      withHost({ images: { 'debian-12': { format: 'raw' } } }),
      'kvm2.images.debian-12.url: required',
    ],
    [
      'an image url that is not http(s)',
      withHost({ images: { deb: { url: 'ftp://x/y' } } }),
      'kvm2.images.deb.url: must be an http:// or https:// URL, a file:/// URL or an absolute path, got "ftp://x/y"',
    ],
    [
      'an image file:// URL naming another machine',
      withHost({ images: { deb: { url: 'file://nas/images/deb.qcow2' } } }),
      'kvm2.images.deb.url: must name a local file (file:///path), got "file://nas/images/deb.qcow2"',
    ],
    [
      'an image file:// URL with a query',
      withHost({ images: { deb: { url: 'file:///images/deb.qcow2?v=2' } } }),
      'kvm2.images.deb.url: a file:// URL takes no query or fragment, got "file:///images/deb.qcow2?v=***"',
    ],
    [
      'an image path with ..',
      withHost({ images: { deb: { url: '/images/../etc/deb.qcow2' } } }),
      `kvm2.images.deb.url: must be an absolute path without '..', got "/images/../etc/deb.qcow2"`,
    ],
    [
      'an image path that is relative',
      withHost({ images: { deb: { url: 'images/deb.qcow2' } } }),
      'kvm2.images.deb.url: must be an http:// or https:// URL, a file:/// URL or an absolute path, got "images/deb.qcow2"',
    ],
    [
      'an image URL whose password has a bare %',
      withHost({ images: { deb: { url: 'https://alice:p%zz@images.example/x.qcow2' } } }),
      'kvm2.images.deb.url: its user name or password is not percent-encoded (a % is written %25)',
    ],
    [
      'a redis URL whose path is no database number',
      withHost({ redis: { url: 'redis://r:6379/abc' } }),
      'kvm2.redis.url: its path must be a database number (redis://host:6379/2), got "/abc"',
    ],
    [
      'a redis URL with a negative database',
      withHost({ redis: { url: 'redis://r:6379/-1' } }),
      'kvm2.redis.url: its path must be a database number (redis://host:6379/2), got "/-1"',
    ],
    [
      'a redis URL with options in its query',
      withHost({ redis: { url: 'redis://r:6379/?db=99&keyPrefix=x' } }),
      "kvm2.redis.url: takes no query parameter but 'family' (the database is its path), got 'db', 'keyPrefix'",
    ],
    [
      // redis://kvm2:4242 with the fragment #Tr0ub4dor@…: the password's '#' was not encoded.
      'a redis URL with a fragment',
      withHost({ redis: { url: 'redis://kvm2:4242#Tr0ub4dor@redis.internal:6379' } }),
      "kvm2.redis.url: has a fragment ('#'): a password holding # / ? @ or % must be percent-encoded",
    ],
    [
      'a redis URL whose password has a bare %',
      withHost({ redis: { url: 'redis://:p%zz@r:6379' } }),
      'kvm2.redis.url: its user name or password is not percent-encoded (a % is written %25)',
    ],
    [
      'both redis.url and redis.sentinel',
      withHost({
        redis: { url: 'redis://r:6379', sentinel: { name: 'm', nodes: ['10.0.0.5:26379'] } },
      }),
      'kvm2.redis.sentinel: give one of redis.url, redis.sentinel and redis.cluster, not redis.url and redis.sentinel',
    ],
    [
      'both redis.sentinel and redis.cluster',
      withHost({
        redis: {
          sentinel: { name: 'm', nodes: ['10.0.0.5:26379'] },
          cluster: { nodes: ['10.0.0.5:7000'] },
        },
      }),
      'kvm2.redis.cluster: give one of redis.url, redis.sentinel and redis.cluster, not redis.sentinel and redis.cluster',
    ],
    [
      'a cluster without nodes',
      withHost({ redis: { cluster: { nodes: [] } } }),
      'kvm2.redis.cluster.nodes: must name at least one node',
    ],
    [
      'a cluster node that is not host:port',
      withHost({ redis: { cluster: { nodes: ['10.0.0.5:7000', 'redis://10.0.0.6:7000'] } } }),
      'kvm2.redis.cluster.nodes[1]: expected host:port (e.g. 10.0.0.5:26379, [::1]:26379), got "redis://10.0.0.6:7000"',
    ],
    [
      'a prefix without a hash tag on Redis Cluster',
      withHost({ redis: { cluster: { nodes: ['10.0.0.5:7000'] }, prefix: 'kvm2' } }),
      'kvm2.redis.prefix: on Redis Cluster the prefix must hold a {hash tag} (e.g. "{kvm2}") so every key lands in one slot, got "kvm2"',
    ],
    [
      'a prefix whose first braces are empty on Redis Cluster',
      withHost({ redis: { cluster: { nodes: ['10.0.0.5:7000'] }, prefix: 'a{}{kvm2}' } }),
      'kvm2.redis.prefix: on Redis Cluster the prefix must hold a {hash tag} (e.g. "{kvm2}") so every key lands in one slot, got "a{}{kvm2}"',
    ],
    [
      'an empty cluster password',
      withHost({ redis: { cluster: { nodes: ['10.0.0.5:7000'], password: '' } } }),
      'kvm2.redis.cluster.password: must not be empty',
    ],
    [
      'a sentinel group without nodes',
      withHost({ redis: { sentinel: { name: 'm', nodes: [] } } }),
      'kvm2.redis.sentinel.nodes: must name at least one sentinel',
    ],
    [
      'a sentinel node without a port',
      withHost({ redis: { sentinel: { name: 'm', nodes: ['10.0.0.5'] } } }),
      'kvm2.redis.sentinel.nodes[0]: expected host:port (e.g. 10.0.0.5:26379, [::1]:26379), got "10.0.0.5"',
    ],
    [
      'an empty sentinel password',
      withHost({ redis: { sentinel: { name: 'm', nodes: ['10.0.0.5:26379'], password: '' } } }),
      'kvm2.redis.sentinel.password: must not be empty',
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
      "kvm2.hosts[0].serialLogDir: must be an absolute directory on the host (no '..', no control characters) or 'none'",
    ],
    [
      'a serialLogDir that climbs out',
      withHost({}, { serialLogDir: '/var/log/../../etc' }),
      "kvm2.hosts[0].serialLogDir: must be an absolute directory on the host (no '..', no control characters) or 'none'",
    ],
    [
      'a serialLogDir with DEL in it',
      withHost({}, { serialLogDir: '/var/log/libvirt/qemu\u007f' }),
      "kvm2.hosts[0].serialLogDir: must be an absolute directory on the host (no '..', no control characters) or 'none'",
    ],
    ...(['..', '.', 'éééééééé', 'br:0'] as const).map((bridge): [string, unknown, string] => [
      `a bridge named ${JSON.stringify(bridge)}, which Linux refuses`,
      { hosts: [{ name: 'hv1', uri: 'qemu:///system', bridge }] },
      'kvm2.hosts[0].bridge: must be a Linux interface name (1-15 bytes, not . or .., no / : or space)',
    ]),
    [
      'a network name with a control character',
      withHost({}, { network: 'def\u0001' }),
      'kvm2.hosts[0].network: must not contain control characters, U+FFFE/U+FFFF or unpaired surrogates',
    ],
    [
      'a pool name with DEL',
      withHost({}, { pool: 'images\u007f' }),
      'kvm2.hosts[0].pool: must not contain control characters, U+FFFE/U+FFFF or unpaired surrogates',
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
      'a default disk larger than a request may ask for',
      withHost({ defaults: { diskGiB: 4097 } }),
      'kvm2.defaults.diskGiB: must be at most 4 TiB',
    ],
    [
      'more default vcpus than a request may ask for',
      withHost({ defaults: { vcpus: 256 } }),
      'kvm2.defaults.vcpus: must be at most 255',
    ],
    [
      'more default memory than a request may ask for',
      withHost({ defaults: { memoryMiB: 4 * 1024 * 1024 + 1 } }),
      'kvm2.defaults.memoryMiB: must be at most 4 TiB',
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
      'a health round every 60 ms (a bare number is milliseconds)',
      withHost({ health: { every: 60, timeout: 20 } }),
      'kvm2.health.every: must be at least 1s (a bare number is milliseconds)',
    ],
    [
      'an address wait of 300 ms',
      withHost({ defaults: { addressTimeout: 300 } }),
      'kvm2.defaults.addressTimeout: must be at least 1s (a bare number is milliseconds)',
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
    ...['127.999.999.999', '127.08.0.1', '127.1', '[::ffff:127.0.0.300]'].map(
      (host): [string, unknown, string] => [
        `a board on ${host} without auth, which is no loopback address`,
        withHost({ board: { listen: `${host}:3000` } }),
        `kvm2.board.auth: required: board.listen ${host.replace(/^\[|\]$/g, '')}:3000 is reachable beyond loopback`,
      ],
    ),
    [
      'a pool reserve that rounds to no byte',
      withHost({}, { poolReserve: '0.4B' }),
      'kvm2.hosts[0].poolReserve: must be at least one byte',
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
      'a redis url with a query and no host (ioredis would dial localhost)',
      withHost({ redis: { url: 'redis://?db=2' } }),
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

  it('refuses a password in a libvirt URI without echoing it', () => {
    const uri = 'qemu+ssh://root:hunter2@hv.example/system';
    const issues = issuesOf({ hosts: [{ ...local, uri }] });
    expect(issues).toEqual([
      "kvm2.hosts[0].uri: a password in 'qemu+ssh://root:***@hv.example/system' is never used: kvm2 authenticates by key (keyfile= or the agent)",
    ]);
  });

  it.each([
    ['a parameter given twice', '?socket=/a&socket=/b', "parameter 'socket' given twice"],
    ['a key file given twice', '?keyfile=/a&keyfile=rel', "parameter 'keyfile' given twice"],
  ])('refuses %s in a libvirt URI', (_, query, message) => {
    const issues = issuesOf({
      hosts: [{ ...local, uri: `qemu+ssh://root@hv.example/system${query}` }],
    });
    expect(issues).toEqual([expect.stringContaining(message)]);
  });

  it.each([
    ['port 0', 'qemu+ssh://root@hv.example:0/system', 'port 0 in'],
    [
      'a user name that is not percent-encoding',
      'qemu+ssh://r%ZZ@hv.example/system',
      'not valid percent-encoding',
    ],
  ])('refuses %s in an ssh URI', (_, uri, message) => {
    expect(issuesOf({ hosts: [{ ...local, uri }] })).toEqual([expect.stringContaining(message)]);
  });

  it('accepts hosts that share a machine but not a daemon', () => {
    const hosts = [
      { ...local, name: 'a', uri: 'qemu+ssh://root@hv.example/system' },
      { ...local, name: 'b', uri: 'qemu+ssh://root@hv.example:2222/system' },
      { ...local, name: 'c', uri: 'qemu+ssh://root@hv.example/session' },
      { ...local, name: 'd', uri: 'qemu+ssh://root@hv.example/system?socket=/srv/other-sock' },
      { ...local, name: 'e', uri: 'test:///default' },
    ];
    expect(parseConfig({ hosts }).hosts.map((h) => h.name)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('never echoes a redis password', () => {
    const issues = issuesOf(withHost({ redis: { url: 'http://:hunter2@redis:6379' } }));
    expect(issues.join('\n')).not.toContain('hunter2');
  });

  it.each([
    ['a YAML flow mapping', 'board: {auth: {username: admin, password:hunter2}}\n'],
    ['a YAML flow mapping of a URL', 'redis: {url:redis://:hunter2@redis:6379}\n'],
    ['a YAML key and value run together', 'redis:\n  "url:redis://:hunter2@redis:6379": 1\n'],
  ])('never echoes the value run into a key without its space: %s', (_, extra) => {
    const text = `hosts: [{name: hv1, uri: 'qemu:///system', network: default}]\n${extra}`;
    const err = (() => {
      try {
        parseConfigText(text);
      } catch (e) {
        return e as Error;
      }
      throw new Error('accepted');
    })();
    expect(err.message).not.toContain('hunter2');
    expect(err.message).toMatch(
      /\["(password|url)…"\]: unknown key \(a space missing after ':'\?\)/,
    );
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

describe('a file that does not parse', () => {
  const SECRET = 'hunter2sec';
  /** `line L, column C` of the first `marker` in `text`, both counted from 1. */
  const where = (text: string, marker: string): string => {
    const before = text.slice(0, text.indexOf(marker)).split('\n');
    return `line ${before.length}, column ${before.at(-1)!.length + 1}`;
  };
  const refusal = (text: string, format: 'json' | 'yaml'): ConfigError => {
    try {
      parseConfigText(text, { format, file: `kvm2.${format}` });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return err as ConfigError;
    }
    throw new Error('accepted');
  };
  const VALUE = 'expected a value (a string in double quotes, a number, true, false, null, [ or {)';

  it.each<[string, string, string]>([
    [
      'an unquoted sentinel password',
      `{\n  "hosts": [{"name": "hv1", "uri": "qemu:///system", "network": "default"}],\n  "redis": {"sentinel": {"name": "m", "nodes": ["s1:26379"], "password": ${SECRET}}}\n}\n`,
      SECRET,
    ],
    [
      'an unquoted redis URL with a password',
      `{\n  "hosts": [{"name": "hv1", "uri": "qemu:///system", "network": "default"}],\n  "redis": {"url": redis://:${SECRET}@redis:6379}\n}\n`,
      'redis://',
    ],
    [
      'an unquoted qemu+ssh URI with a password',
      `{"hosts": [\n  {"name": "hv1", "uri": qemu+ssh://kvm2:${SECRET}@hv1/system, "network": "default"}\n]}\n`,
      'qemu+ssh://',
    ],
  ])('JSON with %s says where and what, never the text', (_what, text, at) => {
    const err = refusal(text, 'json');
    expect(err.issues).toEqual([`kvm2: not valid JSON at ${where(text, at)}: ${VALUE}`]);
    expect(err.message).not.toContain(SECRET.slice(0, 4));
  });

  it.each<[string, string, string]>([
    [
      'a string left open',
      '{"redis": {"url": "redis://:hunter2sec@redis',
      'a string is not closed',
    ],
    [
      'a line break in a string',
      '{"redis": {"url": "redis://:hunter2sec\n@redis"}}',
      'a line break or control character inside a string',
    ],
    ['a key missing its quotes', '{"redis": {url: "x"}}', 'expected a key in double quotes'],
    ['a missing comma', '{"hosts": [] "redis": {}}', "expected ',' or '}'"],
    [
      'text after the end',
      '{"hosts": []} hunter2sec',
      'more text after the end of the configuration',
    ],
    ['a cut-off file', '{"hosts": [', 'the text ends early'],
  ])('JSON with %s names what is wrong', (_what, text, what) => {
    const err = refusal(text, 'json');
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]).toMatch(/^kvm2: not valid JSON at line \d+, column \d+: /);
    expect(err.issues[0]).toContain(what);
    expect(err.message).not.toContain('hunter');
  });

  it.each<[string, string, string]>([
    [
      'a password that starts a block scalar',
      `hosts: [{name: hv1, uri: "qemu:///system", network: default}]\nredis:\n  sentinel:\n    name: m\n    nodes: [s1:26379]\n    password: |${SECRET}\n`,
      'kvm2: not valid YAML at line 6, column 16: ',
    ],
    [
      'a password that reads as a tag',
      `hosts: [{name: hv1, uri: "qemu:///system", network: default}]\nredis:\n  sentinel:\n    name: m\n    nodes: [s1:26379]\n    password: !${SECRET}!x y\n`,
      'kvm2: not valid YAML at line 6, column 15: ',
    ],
    [
      'a password that reads as an alias',
      `hosts: [{name: hv1, uri: "qemu:///system", network: default}]\nredis:\n  sentinel:\n    name: m\n    nodes: [s1:26379]\n    password: *${SECRET}\n`,
      'kvm2.redis.sentinel.password: ',
    ],
  ])('YAML with %s says where, never the text', (_what, text, start) => {
    const err = refusal(text, 'yaml');
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]?.slice(0, start.length)).toBe(start);
    expect(err.message).not.toContain(SECRET.slice(0, 4));
  });
});
