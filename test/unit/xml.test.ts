// Domain and volume XML: the builders' output read back by a parser that is not ours
// (fast-xml-parser in its plain mode) and the validation errors. The metadata reader and the
// property test are xml-metadata.test.ts.
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { buildDomainXml } from '../../src/provider/xml/domain.js';
import { KVM2_XMLNS } from '../../src/provider/xml/metadata.js';
import { type DomainSpec } from '../../src/provider/xml/types.js';
import {
  buildVolumeXml,
  parseDomainDisks,
  parseVolumeBacking,
} from '../../src/provider/xml/volume.js';
import {
  child,
  children,
  expectXmlError,
  metadata,
  plainParser,
  readDomain,
  uefiSpec,
  type Node,
} from '../harness/xml-reading.js';

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

  it('adds a pvpanic device, so a guest panic reaches on_crash and get() says crashed', () => {
    const domain = readDomain(buildDomainXml(uefiSpec));
    expect(child(child(domain, 'devices'), 'panic')).toEqual({ '@_model': 'isa' });
    expect(domain['on_crash']).toBe('destroy');
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
