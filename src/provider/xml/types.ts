// What the XML builders and readers share: their input and output types, the one error class,
// the builder options, and a small reader that turns fast-xml-parser's ordered output into a
// tree of elements (name, attributes, children, text) the readers can walk with namespaces.
import { XMLBuilder, XMLParser } from 'fast-xml-parser';
import { Kvm2Error, type Kvm2ErrorOptions } from '../../errors/error.js';

/** kvm2's own record on every domain it owns (SPEC §3), in kvm2's XML namespace. */
export interface InstanceMetadata {
  /** The create request's uid: the same on every retry of that create. */
  readonly uid: string;
  /** ISO 8601 date-time with a zone designator, e.g. `2025-01-31T12:00:00.000Z`. */
  readonly createdAt: string;
  readonly tag: string;
  readonly image: string;
}

export type DomainType = 'kvm' | 'qemu';
export type Firmware = 'uefi' | 'bios';
export type CpuMode = 'host-passthrough' | 'host-model';
export type NetworkAttachment = { readonly network: string } | { readonly bridge: string };

/** Everything `buildDomainXml` needs; paths are absolute paths on the libvirt host. */
export interface DomainSpec {
  /** DNS label; the libvirt domain name. */
  readonly name: string;
  readonly vcpus: number;
  readonly memoryMiB: number;
  readonly domainType: DomainType;
  readonly firmware: Firmware;
  /** No `<cpu>` element when undefined (QEMU's default model, the only choice under TCG). */
  readonly cpuMode?: CpuMode | undefined;
  /** The instance's qcow2 overlay, attached as virtio `vda`. */
  readonly overlayPath: string;
  /** The raw cloud-init seed image, attached read-only as virtio `vdb`. */
  readonly seedPath: string;
  readonly network: NetworkAttachment;
  /** Unicast MAC, e.g. `52:54:00:12:34:56`; libvirt picks one when undefined. */
  readonly mac?: string | undefined;
  /** Where libvirt (virtlogd) writes the serial console's output; null: no file, pty only. */
  readonly serialLogPath: string | null;
  readonly metadata: InstanceMetadata;
}

export type VolumeFormat = 'qcow2' | 'raw';

export interface VolumeSpec {
  /** Volume name inside its pool (a file name: no `/`). */
  readonly name: string;
  readonly capacityBytes: number | bigint;
  readonly format: VolumeFormat;
  /** Overlays only (qcow2): the base image the overlay reads through to. */
  readonly backingStore?: { readonly path: string; readonly format: VolumeFormat } | undefined;
}

/** A volume's backing store as libvirt reports it; format is libvirt's word for it. */
export interface VolumeBacking {
  readonly path: string;
  readonly format: string | null;
}

/** One `<disk>` of a domain, as libvirt reports it. */
export interface DomainDisk {
  /** `disk`, `cdrom`, `floppy`, `lun`. */
  readonly device: string;
  /** `file`, `block`, `volume`, `network`, … */
  readonly type: string;
  /** `<source file=…>`; null for disks that are not files (or have no medium). */
  readonly sourceFile: string | null;
  /** The driver's format (`qcow2`, `raw`), when given. */
  readonly format: string | null;
  readonly readonly: boolean;
  readonly bus: string | null;
  /** The guest device name, e.g. `vda`. */
  readonly target: string | null;
}

export type XmlErrorCode =
  /** A spec handed to a builder is invalid; `field` names the offending field. */
  | 'ERR_XML_INVALID_SPEC'
  /** The text is not well-formed XML, or not the document a reader expects. */
  | 'ERR_XML_MALFORMED'
  /** A kvm2 metadata element is present but incomplete or wrong. */
  | 'ERR_XML_METADATA_MALFORMED';

/** Every failure of the XML layer. Permanent: the same input fails the same way on retry. */
export class XmlError extends Kvm2Error {
  declare readonly code: XmlErrorCode;
  override name = 'XmlError';

  constructor(
    code: XmlErrorCode,
    message: string,
    /** The spec field (e.g. `network.bridge`, `metadata.uid`) or attribute at fault. */
    readonly field?: string,
    options?: Kvm2ErrorOptions,
  ) {
    super(code, field === undefined ? message : `${field}: ${message}`, options);
  }
}

/**
 * The most vCPUs a domain of kvm2's can have: libvirt's qemu driver refuses more than 255 on
 * x86 without an IOMMU in extended interrupt mode (QEMU_MAX_VCPUS_WITHOUT_EIM), which kvm2's
 * domain XML does not have. Requests and the configuration's default stop here, before a
 * create writes anything (test/integration/xml-libvirt.test.ts).
 */
export const MAX_VCPUS = 255;

// XML 1.0 §2.2 Char, minus the C0 controls XML does allow (tab, LF, CR): kvm2 never needs
// them in a name, path or tag, and attribute-value normalisation would turn them into spaces.
// Lone surrogates are refused too: they cannot be written as UTF-8.
// eslint-disable-next-line no-control-regex
const notXmlSafe = /[\u0000-\u001f\u007f\ufffe\uffff]|\p{Cs}/u;
// eslint-disable-next-line no-control-regex
const notXmlChar = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|\p{Cs}/u;

/** Why XML cannot carry `value` unchanged in a name, path or tag; the message names no value. */
export const XML_UNSAFE_MESSAGE =
  'must not contain control characters, U+FFFE/U+FFFF or unpaired surrogates';

/** Whether XML carries `value` unchanged in a name, path or tag (the producer asks too). */
export function isXmlSafe(value: string): boolean {
  return !notXmlSafe.test(value);
}

/** Linux's dev_valid_name(): 1 to 15 bytes, not `.` or `..`, no `/`, `:` or whitespace. */
export function isInterfaceName(name: string): boolean {
  return (
    name !== '' &&
    Buffer.byteLength(name) <= 15 &&
    name !== '.' &&
    name !== '..' &&
    !/[/:\s]/.test(name) &&
    isXmlSafe(name)
  );
}

export const INTERFACE_NAME_RULE =
  'a Linux interface name (1-15 bytes, not . or .., no / : or space)';

/** Throws ERR_XML_INVALID_SPEC unless `value` is a string XML can carry unchanged. */
export function requireXmlSafeString(field: string, value: unknown): string {
  if (typeof value !== 'string')
    throw new XmlError('ERR_XML_INVALID_SPEC', 'must be a string', field);
  if (!isXmlSafe(value)) throw new XmlError('ERR_XML_INVALID_SPEC', XML_UNSAFE_MESSAGE, field);
  return value;
}

/** An absolute path XML can carry; the libvirt host resolves it, so no normalisation here. */
export function requireAbsolutePath(field: string, value: unknown): string {
  const path = requireXmlSafeString(field, value);
  if (!path.startsWith('/')) {
    throw new XmlError(
      'ERR_XML_INVALID_SPEC',
      `must be an absolute path, got ${JSON.stringify(path)}`,
      field,
    );
  }
  return path;
}

/**
 * The one builder configuration: attributes as `@_name`, text as `#text`, every value escaped
 * (`&`, `<`, `>`, both quotes), and `true` never collapsed to a bare attribute.
 */
export const xmlBuilder = new XMLBuilder({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  textNodeName: '#text',
  format: true,
  indentBy: '  ',
  suppressEmptyNode: true,
  suppressBooleanAttributes: false,
  processEntities: true,
});

/** An element as the readers see it. Names keep their prefix; attributes keep `xmlns:*`. */
export interface XmlElement {
  readonly name: string;
  readonly attributes: ReadonlyMap<string, string>;
  readonly children: readonly XmlElement[];
  /** The element's own text (character data and CDATA), children's text excluded. */
  readonly text: string;
}

const predefinedEntities: Readonly<Record<string, string>> = {
  lt: '<',
  gt: '>',
  amp: '&',
  apos: "'",
  quot: '"',
};

// XML's five predefined entities and character references, in one pass (so `&amp;lt;` stays
// `&lt;`). fast-xml-parser decodes character references only with its HTML entity table on,
// which would also decode `&copy;` and friends; libvirt writes `&#10;` for a newline in an
// attribute, so we need them. DOCTYPE-declared entities are not expanded: libvirt never
// declares any, and a reader of untrusted XML should not.
const xmlOnlyEntityDecoder = {
  setExternalEntities(): void {},
  addInputEntities(): void {},
  reset(): void {},
  setXmlVersion(): void {},
  decode(text: string): string {
    return text.replace(/&([^;&]*);/g, (ref, body: string) => {
      if (Object.hasOwn(predefinedEntities, body)) return predefinedEntities[body] ?? ref;
      const numeric = /^#(?:([0-9]+)|x([0-9a-fA-F]+))$/.exec(body);
      if (numeric === null) throw new XmlError('ERR_XML_MALFORMED', `undeclared entity ${ref}`);
      const codePoint =
        numeric[1] !== undefined ? Number(numeric[1]) : Number.parseInt(numeric[2] ?? '', 16);
      if (codePoint > 0x10ffff || (codePoint >= 0xd800 && codePoint <= 0xdfff)) {
        throw new XmlError('ERR_XML_MALFORMED', `character reference ${ref} is not a character`);
      }
      const char = String.fromCodePoint(codePoint);
      if (notXmlChar.test(char)) {
        throw new XmlError('ERR_XML_MALFORMED', `character reference ${ref} is not allowed in XML`);
      }
      return char;
    });
  },
};

// fast-xml-parser refuses elements and attributes named like the prototype's own properties
// ('__proto__', 'constructor', 'prototype') and renames others ('toString' to '__toString'):
// all legal XML, which any domain's metadata may hold. They go through the parser under a
// prefix no XML name can start with, taken off again in toElement.
const GUARDED_NAMES = new Set([
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  'valueOf',
  '__defineGetter__',
  '__defineSetter__',
  '__lookupGetter__',
  '__lookupSetter__',
]);
const GUARD = '\u0001';
const guardName = (name: string): string => (GUARDED_NAMES.has(name) ? GUARD + name : name);
const unguardName = (name: string): string => (name.startsWith(GUARD) ? name.slice(1) : name);

const orderedParser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  allowBooleanAttributes: false,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  removeNSPrefix: false,
  processEntities: true,
  entityDecoder: xmlOnlyEntityDecoder,
  ignoreDeclaration: true,
  ignorePiTags: true,
  transformTagName: guardName,
  transformAttributeName: guardName,
  // libxml2 takes 256 levels, 2048 with XML_PARSE_HUGE; the parser's default is 100, which a
  // long backing chain in a domain's live XML goes past.
  maxNestedTags: 2048,
});

type OrderedNode = Record<string, unknown>;

function toElement(node: OrderedNode): XmlElement | string | null {
  let name: string | undefined;
  let content: unknown;
  for (const key of Object.keys(node)) {
    if (key === ':@') continue;
    name = key;
    content = node[key];
  }
  if (name === undefined) return null;
  if (name === '#text') return typeof content === 'string' ? content : String(content);
  const attributes = new Map<string, string>();
  const rawAttributes = node[':@'];
  if (typeof rawAttributes === 'object' && rawAttributes !== null) {
    for (const [key, value] of Object.entries(rawAttributes)) {
      attributes.set(unguardName(key), String(value));
    }
  }
  const children: XmlElement[] = [];
  let text = '';
  for (const child of Array.isArray(content) ? (content as OrderedNode[]) : []) {
    const converted = toElement(child);
    if (typeof converted === 'string') text += converted;
    else if (converted !== null) children.push(converted);
  }
  return { name: unguardName(name), attributes, children, text };
}

/**
 * Parses one XML document into its root element. Throws ERR_XML_MALFORMED for text that is not
 * well-formed, has no or several root elements, or holds characters XML forbids.
 */
export function readXml(xml: string): XmlElement {
  if (typeof xml !== 'string') throw new XmlError('ERR_XML_MALFORMED', 'XML must be a string');
  if (notXmlChar.test(xml)) {
    throw new XmlError('ERR_XML_MALFORMED', 'XML holds characters XML 1.0 does not allow');
  }
  let nodes: unknown;
  try {
    nodes = orderedParser.parse(xml, true);
  } catch (err) {
    if (err instanceof XmlError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new XmlError('ERR_XML_MALFORMED', `not well-formed XML: ${reason}`, undefined, {
      cause: err,
    });
  }
  const roots = (Array.isArray(nodes) ? (nodes as OrderedNode[]) : [])
    .map(toElement)
    .filter((node) => node !== null);
  const elements = roots.filter((node): node is XmlElement => typeof node !== 'string');
  const root = elements[0];
  if (root === undefined || elements.length !== 1 || roots.some(isNonBlankText)) {
    throw new XmlError('ERR_XML_MALFORMED', 'XML must hold exactly one root element');
  }
  // The parser drops text after a self-closing root (`<a/>junk`): after the last tag, comments
  // and processing instructions aside, only blanks may follow. No attribute value holds a `<`,
  // so the last `<` starts the last tag.
  const bare = xml.slice(0, endOfLastTag(xml));
  const lastTag = /<(?:[^>"']|"[^"]*"|'[^']*')*>/y;
  lastTag.lastIndex = bare.lastIndexOf('<');
  if (lastTag.exec(bare) === null || lastTag.lastIndex !== bare.length) {
    throw new XmlError('ERR_XML_MALFORMED', 'not well-formed XML: text after the root element');
  }
  return root;
}

/**
 * Where `xml` ends once the blanks, comments and processing instructions that close it are cut
 * off, read backwards from its end: linear in the text. (A pattern that strips every comment
 * scans to the end once for each `<!--` that is never closed, which a CDATA section may hold
 * any number of: quadratic, seconds of a frozen event loop for a few hundred KiB of metadata.)
 * A comment holds no `--`, so the last `<!--` before its `-->` opens it.
 */
function endOfLastTag(xml: string): number {
  let end = xml.length;
  for (;;) {
    while (end > 0 && isXmlBlank(xml.charCodeAt(end - 1))) end -= 1;
    let open = -1;
    if (xml.startsWith('-->', end - 3)) open = xml.lastIndexOf('<!--', end - 7);
    else if (xml.startsWith('?>', end - 2)) open = xml.lastIndexOf('<?', end - 4);
    if (open === -1) return end;
    end = open;
  }
}

/** XML's white space: space, tab, CR, LF. */
function isXmlBlank(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0d || code === 0x0a;
}

function isNonBlankText(node: XmlElement | string): boolean {
  return typeof node === 'string' && node.trim() !== '';
}

/** The part of a qualified name after its prefix. */
export function localName(qualifiedName: string): string {
  const colon = qualifiedName.indexOf(':');
  return colon === -1 ? qualifiedName : qualifiedName.slice(colon + 1);
}

/** The children of `element` named exactly `name` (libvirt's own elements have no prefix). */
export function childrenNamed(element: XmlElement, name: string): XmlElement[] {
  return element.children.filter((child) => child.name === name);
}

export function firstChild(element: XmlElement, name: string): XmlElement | undefined {
  return element.children.find((child) => child.name === name);
}
