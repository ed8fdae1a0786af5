// What a careless or hostile configuration, request or host file can do with names that are
// Object's own (constructor, __proto__, toString) and with YAML aliases (docs/security.md).
import { describe, expect, it, vi } from 'vitest';
import { Document } from 'yaml';
import { Kvm2Error } from '../../src/errors/error.js';
import { hostKeyAlgorithmsFor } from '../../src/libvirt/transport/ssh-keys.js';
import { ConfigError, parseConfig, parseConfigText } from '../../src/provider/config/load.js';
import { parseSize } from '../../src/provider/config/values.js';
import { MAX_ALIASES } from '../../src/provider/config/yaml-aliases.js';
import { imageConfig, type ProviderContext } from '../../src/provider/core/host-context.js';
import { readXml } from '../../src/provider/xml/types.js';
import { issuesOf, withHost } from '../harness/config-input.js';

const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

describe("names that are Object's own", () => {
  const config = parseConfig(
    withHost({ images: { 'debian-12': { url: 'http://127.0.0.1:9/debian-12.qcow2' } } }),
  );
  const ctx = { config } as unknown as ProviderContext;

  it.each(PROTOTYPE_NAMES)(
    'image %j is unknown, a permanent error and not a lookup of Object',
    (name) => {
      const err = thrown(() => imageConfig(ctx, name));
      expect(err).toBeInstanceOf(Kvm2Error);
      expect(err).toMatchObject({ code: 'ERR_UNKNOWN_IMAGE', kind: 'permanent' });
      expect(imageConfig(ctx, 'debian-12').url).toBe('http://127.0.0.1:9/debian-12.qcow2');
    },
  );

  it.each(PROTOTYPE_NAMES)('a size in unit %j is refused by the configuration', (unit) => {
    expect(parseSize(`10${unit}`)).toBeUndefined();
    const issues = issuesOf(withHost({ health: { poolLowSpaceBytes: `10${unit}` } }));
    expect(issues.join('\n')).toContain('kvm2.health.poolLowSpaceBytes: expected a size');
  });

  it('an XML entity named like a property of Object is undeclared, not a function', () => {
    const err = thrown(() => readXml('<domain><name>&constructor;</name></domain>'));
    expect(err).toMatchObject({ code: 'ERR_XML_MALFORMED' });
    expect((err as Error).message).toContain('undeclared entity &constructor;');
    expect(readXml('<domain><name>a&amp;b</name></domain>')).toBeDefined();
  });

  it.each(PROTOTYPE_NAMES)(
    'an XML element or attribute named %s is read as any other (libvirt keeps it in metadata)',
    (name) => {
      const root = readXml(`<domain ${name}="1"><${name} a="b">t</${name}><name>x</name></domain>`);
      expect(root.attributes.get(name)).toBe('1');
      expect(root.children.map((c) => c.name)).toEqual([name, 'name']);
      expect(root.children[0]?.attributes.get('a')).toBe('b');
      expect(root.children[0]?.text).toBe('t');
      expect(Object.getPrototypeOf(root.attributes)).toBe(Map.prototype);
    },
  );

  it.each(['<a/>junk', '<a/>junk<!-- c -->', '<a></a>junk', '<a/>x>', '<a b="1>2"/>x'])(
    'refuses text after the root element: %j',
    (xml) => {
      expect(thrown(() => readXml(xml))).toMatchObject({ code: 'ERR_XML_MALFORMED' });
    },
  );

  it('reads text holding any number of unclosed `<!--` and `<?` in linear time', () => {
    // A domain's own metadata may hold them in a CDATA section (libvirt keeps it), and kvm2
    // reads every domain's XML on a host, foreign ones too. A pattern stripping comments
    // scanned to the end for each: 512 KiB froze the event loop for ~19 s.
    const noise = '<!--<?'.repeat((512 * 1024) / 6);
    const xml = `<domain><metadata><app><![CDATA[${noise}]]></app></metadata><name>x</name></domain>`;
    const started = performance.now();
    const root = readXml(xml);
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(root.children.map((c) => c.name)).toEqual(['metadata', 'name']);
    expect(thrown(() => readXml(`<a/>${noise}`))).toMatchObject({ code: 'ERR_XML_MALFORMED' });
  });

  it.each(['<a/>\u00a0', '<a/><!-- c --> x <!-- d -->', '<a/><?p x?>y'])(
    'refuses text among the comments after the root element: %j',
    (xml) => {
      expect(thrown(() => readXml(xml))).toMatchObject({ code: 'ERR_XML_MALFORMED' });
    },
  );

  it('takes blanks, comments and processing instructions around the root', () => {
    expect(
      readXml('<?xml version="1.0"?>\n<a b="1>2"/> <!-- c > d -->\n').attributes.get('b'),
    ).toBe('1>2');
  });

  it('reads XML nested as deep as libxml2 writes it (a long backing chain)', () => {
    const depth = 300;
    let xml = '<domain>';
    for (let i = 0; i < depth; i += 1) xml += '<backingStore>';
    xml += '<path>/p</path>';
    for (let i = 0; i < depth; i += 1) xml += '</backingStore>';
    let element = readXml(`${xml}</domain>`);
    let levels = 0;
    while (element.children[0] !== undefined) {
      element = element.children[0];
      levels += 1;
    }
    expect(levels).toBe(depth + 1);
    expect(element).toMatchObject({ name: 'path', text: '/p' });
  });

  it.each([
    ['a YAML image', "images:\n  __proto__: {url: 'http://x/y'}\n", 'kvm2.images.__proto__'],
    ['a JSON image', '{"images": {"__proto__": {"url": "http://x/y"}}}', 'kvm2.images.__proto__'],
    ['a host key', 'hosts:\n  - __proto__: {pool: x}\n', 'kvm2.hosts[0].__proto__'],
  ])('a key named __proto__ is refused, never dropped: %s', (_, extra, at) => {
    const host = "hosts: [{name: hv1, uri: 'qemu:///system', network: default}]\n";
    const text = extra.startsWith('{')
      ? extra.replace(
          '{',
          '{"hosts": [{"name": "hv1", "uri": "qemu:///system", "network": "default"}], ',
        )
      : extra.startsWith('hosts')
        ? extra
        : host + extra;
    const err = configErrorOf(text);
    expect(err.issues).toEqual([`${at}: '__proto__' cannot be a key`]);
  });

  it('a known_hosts key type named like a property of Object adds no algorithm', () => {
    const plain = hostKeyAlgorithmsFor([]);
    expect(hostKeyAlgorithmsFor(['constructor', 'toString'])).toEqual(plain);
    expect(hostKeyAlgorithmsFor(['ssh-ed25519'])[0]).toBe('ssh-ed25519');
  });
});

/** Nine anchors each nine aliases of the one before: 9^9 nodes if expanded. */
function billionLaughs(): string {
  const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i <= 9; i += 1) {
    const prev = `*a${i - 1}`;
    lines.push(`a${i}: &a${i} [${Array(9).fill(prev).join(', ')}]`);
  }
  return `${lines.join('\n')}\nhosts:\n  - name: hv1\n    uri: qemu:///system\n    network: default\n`;
}

function configErrorOf(text: string): ConfigError {
  const err = thrown(() => parseConfigText(text, { file: 'kvm2.yaml' }));
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe('YAML aliases', () => {
  it('refuses an alias bomb without expanding it, as a configuration error naming where it expands', () => {
    // The yaml package's own check expands a good part of the bomb (~1.4 s here) before it
    // throws a bare ReferenceError. Measured not by the clock (a loaded machine once took 0.8 s
    // for the walk) but by what ran: the document was never turned into values, where aliases
    // are expanded.
    const madeValues = vi.spyOn(Document.prototype, 'toJS');
    let err: ConfigError;
    let calls: number;
    try {
      err = configErrorOf(billionLaughs());
    } finally {
      calls = madeValues.mock.calls.length; // before restoring, which clears what the spy saw
      madeValues.mockRestore();
    }
    expect(calls, 'Document.toJS calls').toBe(0);
    expect(err.code).toBe('ERR_CONFIG');
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]).toMatch(/^kvm2\.a\d: YAML aliases expand to more than 100000 nodes$/);
  });

  it('refuses more alias nodes than the bound, naming the first one past it', () => {
    const many = Array.from({ length: MAX_ALIASES + 1 }, () => '*d').join(', ');
    const text = `d: &d 1\nlist: [${many}]\nhosts: [{ name: hv1, uri: 'qemu:///system', network: default }]\n`;
    const err = configErrorOf(text);
    expect(err.issues).toEqual([
      `kvm2.list[${MAX_ALIASES}]: more than ${MAX_ALIASES} YAML aliases`,
    ]);
  });

  it('takes the aliases a real file uses: one value named once, used by every host', () => {
    const hosts = Array.from(
      { length: 40 },
      (_, i) =>
        `  - name: hv${i}\n    uri: qemu+ssh://kvm2@10.0.0.${i + 1}/system\n    network: ${i === 0 ? '&net proxies' : '*net'}`,
    ).join('\n');
    const config = parseConfigText(`hosts:\n${hosts}\n`, { file: 'kvm2.yaml' });
    expect(config.hosts).toHaveLength(40);
    expect(new Set(config.hosts.map((h) => h.network))).toEqual(new Set(['proxies']));
  });
  it('takes merge keys: a host written once, the others its settings with a name and URI', () => {
    const text = [
      'hosts:',
      '  - &base',
      '    name: hv1',
      '    uri: qemu+ssh://kvm2@10.0.0.1/system',
      '    network: proxies',
      '    concurrency: 8',
      '  - <<: *base',
      '    name: hv2',
      '    uri: qemu+ssh://kvm2@10.0.0.2/system',
      '',
    ].join('\n');
    const config = parseConfigText(text, { file: 'kvm2.yaml' });
    expect(config.hosts.map((h) => [h.name, h.network, h.concurrency])).toEqual([
      ['hv1', 'proxies', 8],
      ['hv2', 'proxies', 8],
    ]);
    const err = configErrorOf(text.replace('<<: *base', '<<: *nope'));
    expect(err.issues).toEqual([
      'kvm2.hosts[1]["<<"]: a YAML alias names no anchor before it (a value that starts with * needs quotes)',
    ]);
  });
});
