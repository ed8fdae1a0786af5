// The domain XML of a kvm2 instance (SPEC §7), built from a typed spec with fast-xml-parser's
// builder: every user value is an attribute or text the builder escapes, never spliced text.
// docs/domain-xml.md explains the shape; libvirt's reference is
// https://libvirt.org/formatdomain.html (#bios-bootloader for firmware auto-selection,
// #hard-drives-floppy-disks-cdroms, #consoles-serial-parallel-channel-devices for the log).
import { metadataNode, validateMetadata } from './metadata.js';
import {
  INTERFACE_NAME_RULE,
  isInterfaceName,
  XmlError,
  requireAbsolutePath,
  requireXmlSafeString,
  xmlBuilder,
  type DomainSpec,
  type NetworkAttachment,
} from './types.js';

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const macAddress = /^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$/;

function invalid(field: string, message: string): XmlError {
  return new XmlError('ERR_XML_INVALID_SPEC', message, field);
}

function requireOneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value))
    return value as T;
  throw invalid(field, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
}

function requirePositiveInteger(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw invalid(field, `must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

function requireNetworkName(field: string, value: unknown): string {
  const name = requireXmlSafeString(field, value);
  if (name === '' || name.includes('/')) throw invalid(field, 'must be a libvirt network name');
  return name;
}

function requireBridgeName(field: string, value: unknown): string {
  const name = requireXmlSafeString(field, value);
  if (!isInterfaceName(name)) throw invalid(field, `must be ${INTERFACE_NAME_RULE}`);
  return name;
}

function requireNetwork(value: unknown): NetworkAttachment {
  if (typeof value !== 'object' || value === null) {
    throw invalid('network', 'must be { network: name } or { bridge: name }');
  }
  const hasNetwork = 'network' in value && value.network !== undefined;
  const hasBridge = 'bridge' in value && value.bridge !== undefined;
  if (hasNetwork === hasBridge) {
    throw invalid('network', 'must name exactly one of network or bridge');
  }
  return hasNetwork
    ? { network: requireNetworkName('network.network', value.network) }
    : { bridge: requireBridgeName('network.bridge', (value as { bridge: unknown }).bridge) };
}

function requireMac(value: unknown): string {
  const mac = requireXmlSafeString('mac', value).toLowerCase();
  // The least significant bit of the first octet marks a multicast address: not for a NIC.
  if (!macAddress.test(mac) || (Number.parseInt(mac.slice(0, 2), 16) & 1) === 1) {
    throw invalid(
      'mac',
      `must be a unicast MAC like 52:54:00:12:34:56, got ${JSON.stringify(mac)}`,
    );
  }
  if (mac === '00:00:00:00:00:00') throw invalid('mac', 'must not be all zeros');
  return mac;
}

/** Checks every field and returns the spec normalised (MAC lower-cased); errors name the field. */
export function validateDomainSpec(spec: DomainSpec): DomainSpec {
  if (typeof spec !== 'object' || (spec as unknown) === null) {
    throw invalid('spec', 'must be an object');
  }
  const name = requireXmlSafeString('name', spec.name);
  if (!dnsLabel.test(name)) {
    throw invalid(
      'name',
      `must be a DNS label (a-z, 0-9, -; 1-63 characters), got ${JSON.stringify(name)}`,
    );
  }
  const cpuMode =
    spec.cpuMode === undefined
      ? undefined
      : requireOneOf('cpuMode', spec.cpuMode, ['host-passthrough', 'host-model'] as const);
  return {
    name,
    vcpus: requirePositiveInteger('vcpus', spec.vcpus),
    memoryMiB: requirePositiveInteger('memoryMiB', spec.memoryMiB),
    domainType: requireOneOf('domainType', spec.domainType, ['kvm', 'qemu'] as const),
    firmware: requireOneOf('firmware', spec.firmware, ['uefi', 'bios'] as const),
    cpuMode,
    overlayPath: requireAbsolutePath('overlayPath', spec.overlayPath),
    seedPath: requireAbsolutePath('seedPath', spec.seedPath),
    network: requireNetwork(spec.network),
    mac: spec.mac === undefined ? undefined : requireMac(spec.mac),
    serialLogPath:
      spec.serialLogPath === null ? null : requireAbsolutePath('serialLogPath', spec.serialLogPath),
    metadata: validateMetadata(spec.metadata),
  };
}

function osNode(firmware: DomainSpec['firmware']): Record<string, unknown> {
  const type = { '@_arch': 'x86_64', '@_machine': 'q35', '#text': 'hvm' };
  if (firmware === 'bios') return { type };
  // Firmware auto-selection (libvirt >= 7.2 for the <firmware> features): libvirt picks the
  // OVMF build from the descriptors in /usr/share/qemu/firmware that matches, here the one
  // without Secure Boot and without Microsoft's keys (Debian's 60-edk2-x86_64.json), and makes
  // the NVRAM file from its template. Cloud images boot unsigned kernels often enough.
  return {
    '@_firmware': 'efi',
    type,
    firmware: {
      feature: [
        { '@_enabled': 'no', '@_name': 'secure-boot' },
        { '@_enabled': 'no', '@_name': 'enrolled-keys' },
      ],
    },
  };
}

function interfaceNode(
  network: NetworkAttachment,
  mac: string | undefined,
): Record<string, unknown> {
  const source =
    'network' in network
      ? { type: 'network', source: { '@_network': network.network } }
      : { type: 'bridge', source: { '@_bridge': network.bridge } };
  return {
    '@_type': source.type,
    source: source.source,
    ...(mac === undefined ? {} : { mac: { '@_address': mac } }),
    model: { '@_type': 'virtio' },
  };
}

/** The domain XML for `spec` (validated first; ERR_XML_INVALID_SPEC names the bad field). */
export function buildDomainXml(input: DomainSpec): string {
  const spec = validateDomainSpec(input);
  const domain = {
    '@_type': spec.domainType,
    name: spec.name,
    // No <uuid>: libvirt generates it. kvm2's identity is the uid in its metadata.
    metadata: metadataNode(spec.metadata),
    memory: { '@_unit': 'MiB', '#text': spec.memoryMiB },
    currentMemory: { '@_unit': 'MiB', '#text': spec.memoryMiB },
    vcpu: { '@_placement': 'static', '#text': spec.vcpus },
    os: osNode(spec.firmware),
    // ACPI is how the guest hears a graceful shutdown; OVMF on q35 requires it and the APIC.
    features: { acpi: '', apic: '' },
    ...(spec.cpuMode === undefined ? {} : { cpu: { '@_mode': spec.cpuMode } }),
    clock: {
      '@_offset': 'utc',
      timer: [
        { '@_name': 'rtc', '@_tickpolicy': 'catchup' },
        { '@_name': 'pit', '@_tickpolicy': 'delay' },
        { '@_name': 'hpet', '@_present': 'no' },
      ],
    },
    // A guest that powers off or crashes stays shut off (its disks and serial log intact for
    // an operator, its state visible to get()); a guest reboot (cloud-init may ask for one)
    // is a reboot.
    on_poweroff: 'destroy',
    on_reboot: 'restart',
    on_crash: 'destroy',
    // Short-lived servers have no use for guest suspend; a pmsuspended guest is not running.
    pm: {
      'suspend-to-mem': { '@_enabled': 'no' },
      'suspend-to-disk': { '@_enabled': 'no' },
    },
    devices: {
      // type='file' with absolute paths, never type='volume': libvirt's AppArmor helper
      // (virt-aa-helper) labels file paths it sees in the XML, not pool volumes.
      disk: [
        {
          '@_type': 'file',
          '@_device': 'disk',
          driver: { '@_name': 'qemu', '@_type': 'qcow2', '@_discard': 'unmap' },
          source: { '@_file': spec.overlayPath },
          target: { '@_dev': 'vda', '@_bus': 'virtio' },
          // Only the overlay is a boot device; the firmware never tries the seed.
          boot: { '@_order': 1 },
        },
        {
          // The NoCloud seed as a read-only virtio disk, not a SATA cdrom: Debian's cloud
          // kernel has no AHCI driver, and cloud-init finds the seed by its label anyway.
          '@_type': 'file',
          '@_device': 'disk',
          driver: { '@_name': 'qemu', '@_type': 'raw' },
          source: { '@_file': spec.seedPath },
          target: { '@_dev': 'vdb', '@_bus': 'virtio' },
          readonly: '',
        },
      ],
      interface: interfaceNode(spec.network, spec.mac),
      // The guest's ttyS0: a pty for `virsh console`, and (unless the host's serialLogDir is
      // `none`) a file virtlogd writes, truncated at each start (append='off'), so an operator
      // can read a guest's boot.
      serial: {
        '@_type': 'pty',
        ...(spec.serialLogPath === null
          ? {}
          : { log: { '@_file': spec.serialLogPath, '@_append': 'off' } }),
        target: { '@_type': 'isa-serial', '@_port': 0 },
      },
      console: { '@_type': 'pty', target: { '@_type': 'serial', '@_port': 0 } },
      // qemu-guest-agent's port; libvirt picks the host-side socket path.
      channel: {
        '@_type': 'unix',
        target: { '@_type': 'virtio', '@_name': 'org.qemu.guest_agent.0' },
      },
      // Entropy at first boot: cloud-init and sshd key generation otherwise wait for it.
      rng: { '@_model': 'virtio', backend: { '@_model': 'random', '#text': '/dev/urandom' } },
      // pvpanic (ISA port 0x505, which q35 has): a guest kernel's panic reaches qemu, so
      // on_crash acts and get() says crashed. Without it a panicked guest runs on, 'running'.
      panic: { '@_model': 'isa' },
    },
  };
  return xmlBuilder.build({ domain }).trim();
}
