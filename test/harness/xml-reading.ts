// The XML tests' shared parts: a spec and its metadata, an independent reader (fast-xml-parser
// in its plain mode), and the XmlError a builder or reader must throw.
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { expect } from 'vitest';
import {
  XmlError,
  type DomainSpec,
  type InstanceMetadata,
  type XmlErrorCode,
} from '../../src/provider/xml/types.js';

export const metadata: InstanceMetadata = {
  uid: '0b7e5f0c-3f7e-4a53-9d1b-2a4c8e6f1a90',
  createdAt: '2025-01-31T12:00:00.000Z',
  tag: 'egress-proxy',
  image: 'debian-12',
};

export const uefiSpec: DomainSpec = {
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
export const plainParser = new XMLParser({ ...parserOptions, trimValues: true });
export const exactParser = new XMLParser({ ...parserOptions, trimValues: false });

export type Node = Record<string, unknown>;

export function child(node: unknown, name: string): Node {
  const value = (node as Node | undefined)?.[name];
  if (typeof value !== 'object' || value === null) throw new Error(`no <${name}>`);
  return value as Node;
}

export function children(node: unknown, name: string): Node[] {
  const value = (node as Node)[name];
  return Array.isArray(value) ? (value as Node[]) : [];
}

export function readDomain(xml: string, parser = plainParser): Node {
  expect(XMLValidator.validate(xml)).toBe(true);
  return child(parser.parse(xml), 'domain');
}

export function xmlErrorOf(run: () => unknown): XmlError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(XmlError);
    return err as XmlError;
  }
  throw new Error('expected an XmlError');
}

export function expectXmlError(run: () => unknown, code: XmlErrorCode, field?: string): void {
  const err = xmlErrorOf(run);
  expect(err.code).toBe(code);
  expect(err.kind).toBe('permanent');
  if (field !== undefined) {
    expect(err.field).toBe(field);
    expect(err.message.startsWith(`${field}: `)).toBe(true);
  }
}
