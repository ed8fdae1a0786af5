// Storage volume XML (SPEC §7, https://libvirt.org/formatstorage.html#storage-volume-xml), and
// the two things kvm2 reads back from libvirt's XML: an overlay's backing store and a domain's
// disks.
import {
  XmlError,
  childrenNamed,
  firstChild,
  readXml,
  requireAbsolutePath,
  requireXmlSafeString,
  xmlBuilder,
  type DomainDisk,
  type VolumeBacking,
  type VolumeFormat,
  type VolumeSpec,
  type XmlElement,
} from './types.js';

const volumeFormats: readonly VolumeFormat[] = ['qcow2', 'raw'];

function invalid(field: string, message: string): XmlError {
  return new XmlError('ERR_XML_INVALID_SPEC', message, field);
}

function requireFormat(field: string, value: unknown): VolumeFormat {
  if (typeof value === 'string' && (volumeFormats as readonly string[]).includes(value)) {
    return value as VolumeFormat;
  }
  throw invalid(field, `must be qcow2 or raw, got ${JSON.stringify(value)}`);
}

function requireCapacity(value: unknown): bigint {
  if (typeof value === 'bigint' && value > 0n) return value;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return BigInt(value);
  const shown = typeof value === 'bigint' ? `${value}n` : JSON.stringify(value);
  throw invalid('capacityBytes', `must be a positive integer number of bytes, got ${shown}`);
}

function requireVolumeName(value: unknown): string {
  const name = requireXmlSafeString('name', value);
  if (name === '' || name === '.' || name === '..' || name.includes('/')) {
    throw invalid('name', `must be a file name (no /), got ${JSON.stringify(name)}`);
  }
  return name;
}

/**
 * The XML for virStorageVolCreateXML. Allocation 0: a raw volume starts sparse (the upload
 * fills it) instead of being preallocated to its capacity; qcow2 ignores it. A backing store
 * makes the volume a copy-on-write overlay, which only qcow2 can be.
 */
export function buildVolumeXml(spec: VolumeSpec): string {
  if (typeof spec !== 'object' || (spec as unknown) === null) {
    throw invalid('spec', 'must be an object');
  }
  const name = requireVolumeName(spec.name);
  const capacity = requireCapacity(spec.capacityBytes);
  const format = requireFormat('format', spec.format);
  let backingStore: Record<string, unknown> | undefined;
  if (spec.backingStore !== undefined) {
    if (format !== 'qcow2') throw invalid('backingStore', 'only a qcow2 volume can have one');
    const backing: unknown = spec.backingStore;
    if (typeof backing !== 'object' || backing === null) {
      throw invalid('backingStore', 'must be { path, format }');
    }
    const { path, format: backingFormat } = backing as Record<string, unknown>;
    backingStore = {
      path: requireAbsolutePath('backingStore.path', path),
      format: { '@_type': requireFormat('backingStore.format', backingFormat) },
    };
  }
  const volume = {
    name,
    capacity: { '@_unit': 'bytes', '#text': capacity.toString() },
    allocation: { '@_unit': 'bytes', '#text': '0' },
    target: { format: { '@_type': format } },
    ...(backingStore === undefined ? {} : { backingStore }),
  };
  return xmlBuilder.build({ volume }).trim();
}

function requireRoot(xml: string, name: string): XmlElement {
  const root = readXml(xml);
  if (root.name !== name) {
    throw new XmlError('ERR_XML_MALFORMED', `expected a <${name}> document, got <${root.name}>`);
  }
  return root;
}

/** The backing store libvirt reports for a volume (virStorageVolGetXMLDesc), or null. */
export function parseVolumeBacking(volumeXml: string): VolumeBacking | null {
  const backingStore = firstChild(requireRoot(volumeXml, 'volume'), 'backingStore');
  if (backingStore === undefined) return null;
  const path = firstChild(backingStore, 'path')?.text;
  if (path === undefined || path === '') return null;
  const format = firstChild(backingStore, 'format')?.attributes.get('type');
  return { path, format: format ?? null };
}

/** The disks of a domain XML (virDomainGetXMLDesc), in document order. */
export function parseDomainDisks(domainXml: string): DomainDisk[] {
  const devices = firstChild(requireRoot(domainXml, 'domain'), 'devices');
  if (devices === undefined) return [];
  return childrenNamed(devices, 'disk').map((disk) => {
    const target = firstChild(disk, 'target');
    return {
      // libvirt's defaults when the attribute is absent (formatdomain.html#hard-drives…).
      device: disk.attributes.get('device') ?? 'disk',
      type: disk.attributes.get('type') ?? 'file',
      sourceFile: firstChild(disk, 'source')?.attributes.get('file') ?? null,
      format: firstChild(disk, 'driver')?.attributes.get('type') ?? null,
      readonly: firstChild(disk, 'readonly') !== undefined,
      bus: target?.attributes.get('bus') ?? null,
      target: target?.attributes.get('dev') ?? null,
    };
  });
}
