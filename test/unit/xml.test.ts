// Domain, volume and metadata XML: the builders' output read back by a parser that is not
// ours (fast-xml-parser in its plain mode), the validation errors, the metadata reader against
// the shapes libvirt really hands back, and a property test that no value breaks the XML.
import fc from 'fast-check';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { buildDomainXml } from '../../src/provider/xml/domain.js';
import {
  KVM2_XMLNS,
  buildMetadata,
  isIsoDateTime,
  parseMetadata,
} from '../../src/provider/xml/metadata.js';
import {
  XmlError,
  type DomainSpec,
  type InstanceMetadata,
  type XmlErrorCode,
} from '../../src/provider/xml/types.js';
import {
  buildVolumeXml,
  parseDomainDisks,
  parseVolumeBacking,
} from '../../src/provider/xml/volume.js';

const metadata: InstanceMetadata = {
  uid: '0b7e5f0c-3f7e-4a53-9d1b-2a4c8e6f1a90',
  createdAt: '2025-01-31T12:00:00.000Z',
  tag: 'egress-proxy',
  image: 'debian-12',
};

const uefiSpec: DomainSpec = {
  name: 'proxy-1',
  vcpus: 2,
  memoryMiB: 1024,
  domainType: 'kvm',
  firmware: 'uefi',
  overlayPath: '/var/lib/libvirt/images/kvm2-proxy-1.qcow2',
  seedPath: '/var/lib/libvirt/images/kvm2-proxy-1-seed.iso',
  network: { network: 'default' },
  serialLogPath: '/var/log/libvirt/qemu/kvm2-proxy-1-serial.log',
  metadata,
};

// The independent reader: fast-xml-parser's plain mode, every attribute kept as a string;
// trimmed for structure, untrimmed where values must come back exactly.
const parserOptions = {
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  parseTagValue: false,
  parseAttributeValue: false,
  isArray: (name: string) => ['disk', 'feature', 'timer', 'kvm2:instance'].includes(name),
};
const plainParser = new XMLParser({ ...parserOptions, trimValues: true });
const exactParser = new XMLParser({ ...parserOptions, trimValues: false });

type Node = Record<string, unknown>;

function child(node: unknown, name: string): Node {
  const value = (node as Node | undefined)?.[name];
  if (typeof value !== 'object' || value === null) throw new Error(`no <${name}>`);
  return value as Node;
}

function children(node: unknown, name: string): Node[] {
  const value = (node as Node)[name];
  return Array.isArray(value) ? (value as Node[]) : [];
}

function readDomain(xml: string, parser = plainParser): Node {
  expect(XMLValidator.validate(xml)).toBe(true);
  return child(parser.parse(xml), 'domain');
}

function xmlErrorOf(run: () => unknown): XmlError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(XmlError);
    return err as XmlError;
  }
  throw new Error('expected an XmlError');
}

function expectXmlError(run: () => unknown, code: XmlErrorCode, field?: string): void {
  const err = xmlErrorOf(run);
  expect(err.code).toBe(code);
  expect(err.kind).toBe('permanent');
  if (field !== undefined) {
    expect(err.field).toBe(field);
    expect(err.message.startsWith(`${field}: `)).toBe(true);
  }
}

describe('buildDomainXml', () => {
  it('builds a q35 UEFI domain with secure boot off, ACPI and APIC', () => {
    const domain = readDomain(buildDomainXml(uefiSpec));
    expect(domain['@_type']).toBe('kvm');
    expect(domain['name']).toBe('proxy-1');
    expect(domain['uuid']).toBeUndefined();
    const os = child(domain, 'os');
    expect(os['@_firmware']).toBe('efi');
    expect(child(os, 'type')).toMatchObject({ '@_machine': 'q35', '#text': 'hvm' });
    expect(os['loader']).toBeUndefined();
    const features = children(child(os, 'firmware'), 'feature').map((f) => [
      f['@_name'],
      f['@_enabled'],
    ]);
    expect(features).toEqual([
      ['secure-boot', 'no'],
      ['enrolled-keys', 'no'],
    ]);
    expect(Object.keys(child(domain, 'features'))).toEqual(['acpi', 'apic']);
    expect(child(domain, 'memory')).toEqual({ '@_unit': 'MiB', '#text': '1024' });
    expect(child(domain, 'vcpu')['#text']).toBe('2');
    expect(domain['cpu']).toBeUndefined();
    expect([domain['on_poweroff'], domain['on_reboot'], domain['on_crash']]).toEqual([
      'destroy',
      'restart',
      'destroy',
    ]);
  });

  it('attaches the overlay and the read-only seed as virtio file disks', () => {
    const devices = child(readDomain(buildDomainXml(uefiSpec)), 'devices');
    const [overlay, seed, ...rest] = children(devices, 'disk');
    expect(rest).toEqual([]);
    expect(overlay).toMatchObject({
      '@_type': 'file',
      '@_device': 'disk',
      driver: { '@_type': 'qcow2' },
      source: { '@_file': uefiSpec.overlayPath },
      target: { '@_dev': 'vda', '@_bus': 'virtio' },
      boot: { '@_order': '1' },
    });
    expect(overlay?.['readonly']).toBeUndefined();
    expect(seed).toMatchObject({
      '@_type': 'file',
      '@_device': 'disk',
      driver: { '@_type': 'raw' },
      source: { '@_file': uefiSpec.seedPath },
      target: { '@_dev': 'vdb', '@_bus': 'virtio' },
      readonly: '',
    });
    expect(seed?.['boot']).toBeUndefined();
  });

  it('adds the NIC, agent channel, logged serial console and the metadata', () => {
    const domain = readDomain(buildDomainXml(uefiSpec));
    const devices = child(domain, 'devices');
    expect(child(devices, 'interface')).toEqual({
      '@_type': 'network',
      source: { '@_network': 'default' },
      model: { '@_type': 'virtio' },
    });
    expect(child(devices, 'channel')).toEqual({
      '@_type': 'unix',
      target: { '@_type': 'virtio', '@_name': 'org.qemu.guest_agent.0' },
    });
    expect(child(devices, 'serial')).toMatchObject({
      '@_type': 'pty',
      log: { '@_file': uefiSpec.serialLogPath, '@_append': 'off' },
    });
    expect(child(devices, 'console')).toMatchObject({ '@_type': 'pty' });
    // serialLogDir none: the console stays a pty, with no file behind it.
    const unlogged = child(
      readDomain(buildDomainXml({ ...uefiSpec, serialLogPath: null })),
      'devices',
    );
    expect(child(unlogged, 'serial')).toEqual({
      '@_type': 'pty',
      target: { '@_type': 'isa-serial', '@_port': '0' },
    });
    const [instance, ...others] = children(child(domain, 'metadata'), 'kvm2:instance');
    expect(others).toEqual([]);
    expect(instance).toEqual({
      '@_xmlns:kvm2': KVM2_XMLNS,
      '@_uid': metadata.uid,
      '@_createdAt': metadata.createdAt,
      '@_tag': metadata.tag,
      '@_image': metadata.image,
    });
  });

  it('builds BIOS without firmware selection, a CPU mode, a bridge and a MAC', () => {
    const domain = readDomain(
      buildDomainXml({
        ...uefiSpec,
        domainType: 'qemu',
        firmware: 'bios',
        cpuMode: 'host-passthrough',
        network: { bridge: 'br0' },
        mac: '52:54:00:AB:cd:0F',
      }),
    );
    expect(domain['@_type']).toBe('qemu');
    const os = child(domain, 'os');
    expect(os['@_firmware']).toBeUndefined();
    expect(os['firmware']).toBeUndefined();
    expect(os['loader']).toBeUndefined();
    expect(child(os, 'type')['@_machine']).toBe('q35');
    expect(child(domain, 'cpu')).toEqual({ '@_mode': 'host-passthrough' });
    expect(child(child(domain, 'devices'), 'interface')).toEqual({
      '@_type': 'bridge',
      source: { '@_bridge': 'br0' },
      mac: { '@_address': '52:54:00:ab:cd:0f' },
      model: { '@_type': 'virtio' },
    });
  });

  const bad: [string, Partial<Record<keyof DomainSpec, unknown>>][] = [
    ['name', { name: 'Proxy_1' }],
    ['name', { name: '' }],
    ['name', { name: '-proxy' }],
    ['name', { name: 'a'.repeat(64) }],
    ['name', { name: 'proxy-1\n' }],
    ['vcpus', { vcpus: 0 }],
    ['vcpus', { vcpus: 1.5 }],
    ['vcpus', { vcpus: '2' }],
    ['memoryMiB', { memoryMiB: -512 }],
    ['memoryMiB', { memoryMiB: Number.NaN }],
    ['domainType', { domainType: 'xen' }],
    ['firmware', { firmware: 'coreboot' }],
    ['cpuMode', { cpuMode: 'maximum' }],
    ['overlayPath', { overlayPath: 'images/kvm2-proxy-1.qcow2' }],
    ['overlayPath', { overlayPath: '/var/lib/libvirt/images/a\u0000b' }],
    ['seedPath', { seedPath: '' }],
    ['serialLogPath', { serialLogPath: 'serial.log' }],
    ['network', { network: {} }],
    ['network', { network: { network: 'default', bridge: 'br0' } }],
    ['network.network', { network: { network: 'a/b' } }],
    ['network.bridge', { network: { bridge: 'a-very-long-bridge' } }],
    ['network.bridge', { network: { bridge: 'br 0' } }],
    ['mac', { mac: '01:00:5e:00:00:01' }],
    ['mac', { mac: '52:54:00:12:34' }],
    ['metadata.uid', { metadata: { ...metadata, uid: ' ' } }],
    ['metadata.createdAt', { metadata: { ...metadata, createdAt: 'yesterday' } }],
    ['metadata.createdAt', { metadata: { ...metadata, createdAt: '2025-02-29T00:00:00Z' } }],
    ['metadata.tag', { metadata: { ...metadata, tag: 'bell\u0007' } }],
    ['metadata.image', { metadata: { ...metadata, image: '' } }],
  ];
  it.each(bad)('rejects a bad %s, naming the field', (field, override) => {
    const spec = { ...uefiSpec, ...override } as DomainSpec;
    expectXmlError(() => buildDomainXml(spec), 'ERR_XML_INVALID_SPEC', field);
  });
});

describe('buildVolumeXml', () => {
  const parseVolume = (xml: string): Node => {
    expect(XMLValidator.validate(xml)).toBe(true);
    return child(plainParser.parse(xml), 'volume');
  };

  it('builds a qcow2 overlay with its backing store', () => {
    const volume = parseVolume(
      buildVolumeXml({
        name: 'kvm2-proxy-1.qcow2',
        capacityBytes: 10n * 2n ** 30n,
        format: 'qcow2',
        backingStore: { path: '/var/lib/libvirt/images/kvm2-base-ab12.qcow2', format: 'qcow2' },
      }),
    );
    expect(volume).toEqual({
      name: 'kvm2-proxy-1.qcow2',
      capacity: { '@_unit': 'bytes', '#text': '10737418240' },
      allocation: { '@_unit': 'bytes', '#text': '0' },
      target: { format: { '@_type': 'qcow2' } },
      backingStore: {
        path: '/var/lib/libvirt/images/kvm2-base-ab12.qcow2',
        format: { '@_type': 'qcow2' },
      },
    });
  });

  it('builds a raw volume from a number capacity, without backing store', () => {
    const volume = parseVolume(
      buildVolumeXml({ name: 'kvm2-proxy-1-seed.iso', capacityBytes: 376832, format: 'raw' }),
    );
    expect(child(volume, 'capacity')['#text']).toBe('376832');
    expect(child(child(volume, 'target'), 'format')['@_type']).toBe('raw');
    expect(volume['backingStore']).toBeUndefined();
  });

  const base = { name: 'kvm2-v.qcow2', capacityBytes: 1024, format: 'qcow2' } as const;
  const bad: [string, Record<string, unknown>][] = [
    ['format', { format: 'vmdk' }],
    ['format', { format: 'QCOW2' }],
    ['capacityBytes', { capacityBytes: 0 }],
    ['capacityBytes', { capacityBytes: -1 }],
    ['capacityBytes', { capacityBytes: 1.5 }],
    ['capacityBytes', { capacityBytes: 0n }],
    ['capacityBytes', { capacityBytes: -5n }],
    ['capacityBytes', { capacityBytes: '1024' }],
    ['capacityBytes', { capacityBytes: 2 ** 53 }],
    ['name', { name: 'a/b.qcow2' }],
    ['name', { name: '' }],
    ['backingStore', { format: 'raw', backingStore: { path: '/b.qcow2', format: 'qcow2' } }],
    ['backingStore.path', { backingStore: { path: 'b.qcow2', format: 'qcow2' } }],
    ['backingStore.format', { backingStore: { path: '/b.vmdk', format: 'vmdk' } }],
  ];
  it.each(bad)('rejects a bad %s', (field, override) => {
    expectXmlError(() => buildVolumeXml({ ...base, ...override }), 'ERR_XML_INVALID_SPEC', field);
  });
});

describe('parseVolumeBacking', () => {
  // As libvirt 9.0's vol-dumpxml shows a dir pool's overlay (trimmed).
  const overlayXml = `<volume type='file'>
  <name>kvm2-proxy-1.qcow2</name>
  <key>/var/lib/libvirt/images/kvm2-proxy-1.qcow2</key>
  <capacity unit='bytes'>10737418240</capacity>
  <target>
    <path>/var/lib/libvirt/images/kvm2-proxy-1.qcow2</path>
    <format type='qcow2'/>
  </target>
  <backingStore>
    <path>/var/lib/libvirt/images/kvm2-base-&amp;.qcow2</path>
    <format type='qcow2'/>
  </backingStore>
</volume>`;

  it('reads the backing path and format', () => {
    expect(parseVolumeBacking(overlayXml)).toEqual({
      path: '/var/lib/libvirt/images/kvm2-base-&.qcow2',
      format: 'qcow2',
    });
  });

  it('is null without a backing store', () => {
    expect(parseVolumeBacking(`<volume><name>v</name><target/></volume>`)).toBeNull();
    expect(parseVolumeBacking(`<volume><backingStore/></volume>`)).toBeNull();
  });

  it('refuses what is not a volume', () => {
    expectXmlError(() => parseVolumeBacking('<pool/>'), 'ERR_XML_MALFORMED');
    expectXmlError(() => parseVolumeBacking('<volume>'), 'ERR_XML_MALFORMED');
  });
});

describe('parseDomainDisks', () => {
  it('reads back what buildDomainXml wrote', () => {
    expect(parseDomainDisks(buildDomainXml(uefiSpec))).toEqual([
      {
        device: 'disk',
        type: 'file',
        sourceFile: uefiSpec.overlayPath,
        format: 'qcow2',
        readonly: false,
        bus: 'virtio',
        target: 'vda',
      },
      {
        device: 'disk',
        type: 'file',
        sourceFile: uefiSpec.seedPath,
        format: 'raw',
        readonly: true,
        bus: 'virtio',
        target: 'vdb',
      },
    ]);
  });

  it('reports disks that are not files, and empty cdroms', () => {
    const xml = `<domain type='kvm'><name>x</name><devices>
      <disk type='volume' device='disk'><driver name='qemu' type='qcow2'/>
        <source pool='default' volume='v'/><target dev='vda' bus='virtio'/></disk>
      <disk type='file' device='cdrom'><target dev='sda' bus='sata'/><readonly/></disk>
      <interface type='network'/></devices></domain>`;
    expect(parseDomainDisks(xml)).toEqual([
      {
        device: 'disk',
        type: 'volume',
        sourceFile: null,
        format: 'qcow2',
        readonly: false,
        bus: 'virtio',
        target: 'vda',
      },
      {
        device: 'cdrom',
        type: 'file',
        sourceFile: null,
        format: null,
        readonly: true,
        bus: 'sata',
        target: 'sda',
      },
    ]);
    expect(parseDomainDisks(`<domain><name>x</name></domain>`)).toEqual([]);
  });
});

describe('kvm2 metadata', () => {
  const tricky: InstanceMetadata = {
    uid: `u<1>&"'`,
    createdAt: '2025-01-31T12:00:00.000Z',
    tag: 'tag ]]> é😀',
    image: 'debian-12',
  };

  it('builds the element without namespace for DomainSetMetadata, with it for <metadata>', () => {
    const bare = buildMetadata(metadata);
    expect(XMLValidator.validate(bare)).toBe(true);
    expect(plainParser.parse(bare)).toEqual({
      instance: {
        '@_uid': metadata.uid,
        '@_createdAt': metadata.createdAt,
        '@_tag': metadata.tag,
        '@_image': metadata.image,
      },
    });
    const namespaced = buildMetadata(metadata, { namespaced: true });
    expect(children(plainParser.parse(namespaced), 'kvm2:instance')[0]?.['@_xmlns:kvm2']).toBe(
      KVM2_XMLNS,
    );
    expect(parseMetadata(bare)).toEqual(metadata);
    expect(parseMetadata(namespaced)).toEqual(metadata);
  });

  it('reads the element alone, as virDomainGetMetadata returns it', () => {
    // Byte for byte what libvirt 9.0 returned for `tricky` (virsh metadata --uri).
    const fromLibvirt = `<instance uid="u&lt;1&gt;&amp;&quot;'" createdAt="2025-01-31T12:00:00.000Z" tag="tag ]]&gt; &#xE9;&#x1F600;" image="debian-12"/>\n`;
    expect(parseMetadata(fromLibvirt)).toEqual(tricky);
    // After a DomainSetMetadata of an element carrying its own prefix, libvirt adds its key.
    expect(
      parseMetadata(
        `<instance xmlns:kvm2="${KVM2_XMLNS}" uid="u" createdAt="2025-01-31T12:00:00Z" tag="" image="i"/>`,
      ),
    ).toEqual({ uid: 'u', createdAt: '2025-01-31T12:00:00Z', tag: '', image: 'i' });
  });

  const ours = `uid="u1" createdAt="2025-01-31T12:00:00+02:00" tag="t" image="i"`;
  const expected = { uid: 'u1', createdAt: '2025-01-31T12:00:00+02:00', tag: 't', image: 'i' };
  const domainWith = (metadataXml: string, rootAttributes = ''): string =>
    `<domain type='kvm'${rootAttributes}><name>x</name><metadata>${metadataXml}</metadata><devices/></domain>`;
  const otherApp = `<app:instance xmlns:app="https://example.com/app/1" uid="evil" createdAt="2020-01-01T00:00:00Z" tag="t" image="i"/>`;

  it.each([
    [
      'next to other applications',
      `${otherApp}<kvm2:instance xmlns:kvm2="${KVM2_XMLNS}" ${ours}/>`,
    ],
    ['without the namespace declaration', `<kvm2:instance ${ours}/>`],
    ['under another prefix', `${otherApp}<k:instance xmlns:k="${KVM2_XMLNS}" ${ours}/>`],
    ['in the default namespace', `<instance xmlns="${KVM2_XMLNS}" ${ours}/>`],
    [
      'with children and comments of its own',
      `<!-- c --><kvm2:instance xmlns:kvm2="${KVM2_XMLNS}" ${ours}>\n  <kvm2:extra/></kvm2:instance>`,
    ],
  ])('reads it from a whole domain XML, %s', (_case, metadataXml) => {
    expect(parseMetadata(domainWith(metadataXml))).toEqual(expected);
  });

  it('follows a namespace declared on the domain element', () => {
    const xml = domainWith(`<x:instance ${ours}/>`, ` xmlns:x="${KVM2_XMLNS}"`);
    expect(parseMetadata(xml)).toEqual(expected);
  });

  it.each([
    [
      'another namespace under our prefix',
      `<kvm2:instance xmlns:kvm2="https://evil.example/" ${ours}/>`,
    ],
    ['only another application', otherApp],
    ['an instance in no namespace', `<instance ${ours}/>`],
    ['a default namespace not ours', `<instance xmlns="https://example.com/app/1" ${ours}/>`],
    ['no metadata of anyone', ''],
  ])('is null for %s', (_case, metadataXml) => {
    expect(parseMetadata(domainWith(metadataXml))).toBeNull();
  });

  it('is null for a domain without <metadata> and for foreign elements alone', () => {
    expect(parseMetadata(`<domain type='kvm'><name>x</name></domain>`)).toBeNull();
    expect(parseMetadata(`<instance xmlns="https://example.com/" ${ours}/>`)).toBeNull();
    expect(parseMetadata(`<app:instance xmlns:app="https://example.com/" ${ours}/>`)).toBeNull();
  });

  it.each([
    ['uid', `createdAt="2025-01-31T12:00:00Z" tag="t" image="i"`],
    ['uid', `uid="  " createdAt="2025-01-31T12:00:00Z" tag="t" image="i"`],
    ['createdAt', `uid="u" tag="t" image="i"`],
    ['createdAt', `uid="u" createdAt="yesterday" tag="t" image="i"`],
    ['createdAt', `uid="u" createdAt="2025-13-01T00:00:00Z" tag="t" image="i"`],
    ['createdAt', `uid="u" createdAt="2025-01-31" tag="t" image="i"`],
    ['tag', `uid="u" createdAt="2025-01-31T12:00:00Z" image="i"`],
    ['image', `uid="u" createdAt="2025-01-31T12:00:00Z" tag="t"`],
  ])('throws a malformed-metadata error for a bad %s', (field, attributes) => {
    const xml = domainWith(`<kvm2:instance xmlns:kvm2="${KVM2_XMLNS}" ${attributes}/>`);
    expectXmlError(() => parseMetadata(xml), 'ERR_XML_METADATA_MALFORMED', field);
  });

  it.each([
    ['not XML', 'uid=u1'],
    ['unclosed', `<domain><metadata>`],
    [
      'an undeclared entity',
      `<instance uid="&bogus;" createdAt="2025-01-31T12:00:00Z" tag="" image="i"/>`,
    ],
    ['a NUL reference', `<instance uid="&#0;" createdAt="2025-01-31T12:00:00Z" tag="" image="i"/>`],
    [
      'a raw control character',
      `<instance uid="\u0001" createdAt="2025-01-31T12:00:00Z" tag="" image="i"/>`,
    ],
    ['two roots', `<a/><b/>`],
  ])('throws a malformed-XML error for %s', (_case, xml) => {
    expectXmlError(() => parseMetadata(xml), 'ERR_XML_MALFORMED');
  });

  it.each([
    ['2025-01-31T12:00:00Z', true],
    ['2025-01-31T12:00:00.123456789Z', true],
    ['2024-02-29T23:59:59-05:30', true],
    ['2025-02-29T00:00:00Z', false],
    ['2025-01-31T24:00:00Z', false],
    ['2025-01-31T12:00Z', false],
    ['2025-01-31T12:00:00', false],
    ['2025-01-31 12:00:00Z', false],
    [' 2025-01-31T12:00:00Z', false],
  ])('isIsoDateTime(%j) is %s', (value, valid) => {
    expect(isIsoDateTime(value)).toBe(valid);
  });
});

describe('no value can break or inject XML (property)', () => {
  // Characters XML and kvm2 accept, weighted towards the ones that break naive XML.
  const nasty = fc.constantFrom('<', '>', '&', '"', "'", ']]>', '&amp;', '&#60;', '<!--', ' ');
  const anyChar = fc
    .string({ unit: 'binary', minLength: 1, maxLength: 1 })
    // eslint-disable-next-line no-control-regex
    .filter((c) => !/[\u0000-\u001f\u007f\ufffe\uffff]/.test(c));
  const text = fc.string({ unit: fc.oneof(nasty, anyChar), maxLength: 24 });
  const nonBlank = text.filter((s) => s.trim() !== '');
  const path = text.map((s) => `/var/lib/${s}`);
  const spec = fc.record({
    name: fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/),
    overlayPath: path,
    seedPath: path,
    serialLogPath: path,
    metadata: fc.record({
      uid: nonBlank,
      createdAt: fc
        .date({ min: new Date('1970-01-01'), max: new Date('9999-12-31'), noInvalidDate: true })
        .map((d) => d.toISOString()),
      tag: text,
      image: nonBlank,
    }),
  });

  it('builds well-formed XML whose values read back unchanged', () => {
    fc.assert(
      fc.property(spec, (values) => {
        const xml = buildDomainXml({ ...uefiSpec, ...values });
        expect(XMLValidator.validate(xml)).toBe(true);
        expect(parseMetadata(xml)).toEqual(values.metadata);
        expect(parseMetadata(buildMetadata(values.metadata))).toEqual(values.metadata);
        const disks = parseDomainDisks(xml);
        expect(disks.map((d) => d.sourceFile)).toEqual([values.overlayPath, values.seedPath]);
        // An independent reader sees one domain with exactly the name and the two disks.
        const domain = readDomain(xml, exactParser);
        expect(domain['name']).toBe(values.name);
        const [instance] = children(child(domain, 'metadata'), 'kvm2:instance');
        expect(instance).toMatchObject({
          '@_uid': values.metadata.uid,
          '@_createdAt': values.metadata.createdAt,
          '@_tag': values.metadata.tag,
          '@_image': values.metadata.image,
        });
        expect(children(child(domain, 'devices'), 'disk')).toHaveLength(2);
        expect(child(child(child(domain, 'devices'), 'serial'), 'log')['@_file']).toBe(
          values.serialLogPath,
        );
      }),
      { numRuns: 300 },
    );
  });
});
