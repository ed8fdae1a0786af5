// The kvm2 metadata element (SPEC §3): what makes a domain kvm2's, and the only place its uid,
// creation time, tag and image live. Inside a domain's <metadata>:
//
//   <kvm2:instance xmlns:kvm2="https://kvm2.dev/xmlns/instance/1"
//                  uid="…" createdAt="2025-01-31T12:00:00.000Z" tag="…" image="…"/>
//
// Attributes, not child elements: the record is four scalars, an attribute appears once by
// the rules of XML (no duplicate or repeated child to arbitrate), their order does not
// matter, and libvirt re-indents the metadata it stores: pretty-printing never touches an
// attribute's value, whereas it could add whitespace text around children. Control
// characters, which attribute-value normalisation would turn into spaces, are refused.
//
// libvirt keeps one element per namespace URI inside <metadata>
// (https://libvirt.org/formatdomain.html#general-metadata), so the element is found by its
// namespace, not its prefix: another prefix bound to our URI is ours, and an `instance`
// element of another application's namespace is not. virDomainGetMetadata and
// virDomainSetMetadata (libvirt 9.0, seen with virsh) deal in the element *without* its
// namespace: Get returns `<instance uid=…/>`, and Set wants the same, adding the namespace
// itself from its `uri` and `key` arguments. Set rejects an element that already declares
// the key's prefix ("failed to create a new XML namespace"), and stores an undeclared
// `kvm2:instance` as `kvm2:kvm2:instance`.
import {
  XmlError,
  firstChild,
  localName,
  readXml,
  requireXmlSafeString,
  xmlBuilder,
  type InstanceMetadata,
  type XmlElement,
} from './types.js';

export const KVM2_XMLNS = 'https://kvm2.dev/xmlns/instance/1';
/** The prefix kvm2 writes (the `key` of virDomainSetMetadata). */
export const KVM2_XMLNS_PREFIX = 'kvm2';
export const KVM2_METADATA_ELEMENT = 'instance';

const qualifiedName = `${KVM2_XMLNS_PREFIX}:${KVM2_METADATA_ELEMENT}`;

// RFC 3339 profile of ISO 8601: a full date-time with seconds and a zone designator.
const isoDateTime =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|([+-])(\d{2}):(\d{2}))$/;

/** True when `value` is an ISO 8601 date-time (seconds and zone required) naming a real instant. */
export function isIsoDateTime(value: string): boolean {
  const match = isoDateTime.exec(value);
  if (match === null) return false;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const offsetHours = match[8] === undefined ? 0 : Number(match[8]);
  const offsetMinutes = match[9] === undefined ? 0 : Number(match[9]);
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) {
    return false;
  }
  // Date.UTC rolls 31 February over into March; a real date survives the round trip.
  const date = new Date(Date.UTC(year, month - 1, day));
  return (
    date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
  );
}

/** Checks every field, naming it (`metadata.uid`, …) in the error. */
export function validateMetadata(m: InstanceMetadata, fieldPrefix = 'metadata.'): InstanceMetadata {
  if (typeof m !== 'object' || (m as unknown) === null) {
    throw new XmlError('ERR_XML_INVALID_SPEC', 'must be an object', fieldPrefix.slice(0, -1));
  }
  const uid = requireXmlSafeString(`${fieldPrefix}uid`, m.uid);
  if (uid.trim() === '') {
    throw new XmlError('ERR_XML_INVALID_SPEC', 'must not be blank', `${fieldPrefix}uid`);
  }
  const createdAt = requireXmlSafeString(`${fieldPrefix}createdAt`, m.createdAt);
  if (!isIsoDateTime(createdAt)) {
    throw new XmlError(
      'ERR_XML_INVALID_SPEC',
      `must be an ISO 8601 date-time with a zone, got ${JSON.stringify(createdAt)}`,
      `${fieldPrefix}createdAt`,
    );
  }
  const tag = requireXmlSafeString(`${fieldPrefix}tag`, m.tag);
  const image = requireXmlSafeString(`${fieldPrefix}image`, m.image);
  if (image.trim() === '') {
    throw new XmlError('ERR_XML_INVALID_SPEC', 'must not be blank', `${fieldPrefix}image`);
  }
  return { uid, createdAt, tag, image };
}

function metadataAttributes(m: InstanceMetadata): Record<string, string> {
  const { uid, createdAt, tag, image } = validateMetadata(m);
  return { '@_uid': uid, '@_createdAt': createdAt, '@_tag': tag, '@_image': image };
}

/** The element as a builder object, for embedding in a domain's `<metadata>`. */
export function metadataNode(m: InstanceMetadata): Record<string, unknown> {
  return {
    [qualifiedName]: { [`@_xmlns:${KVM2_XMLNS_PREFIX}`]: KVM2_XMLNS, ...metadataAttributes(m) },
  };
}

/**
 * The element as XML. By default in the form virDomainSetMetadata wants (type ELEMENT, key
 * KVM2_XMLNS_PREFIX, uri KVM2_XMLNS), which is also what virDomainGetMetadata returns: the
 * element without namespace, `<instance uid=…/>`. With `namespaced`, the element as it sits
 * inside a domain's `<metadata>`: `<kvm2:instance xmlns:kvm2=…/>`.
 */
export function buildMetadata(m: InstanceMetadata, options: { namespaced?: boolean } = {}): string {
  const node =
    options.namespaced === true
      ? metadataNode(m)
      : { [KVM2_METADATA_ELEMENT]: metadataAttributes(m) };
  return xmlBuilder.build(node).trim();
}

type NamespaceScope = ReadonlyMap<string, string>;

function enterScope(element: XmlElement, outer: NamespaceScope): NamespaceScope {
  let scope: Map<string, string> | undefined;
  for (const [name, value] of element.attributes) {
    if (name === 'xmlns' || name.startsWith('xmlns:')) {
      scope ??= new Map(outer);
      scope.set(name === 'xmlns' ? '' : name.slice('xmlns:'.length), value);
    }
  }
  return scope ?? outer;
}

function isOurs(element: XmlElement, scope: NamespaceScope, isRoot: boolean): boolean {
  if (localName(element.name) !== KVM2_METADATA_ELEMENT) return false;
  const colon = element.name.indexOf(':');
  const prefix = colon === -1 ? '' : element.name.slice(0, colon);
  const uri = scope.get(prefix);
  if (uri !== undefined) return uri === KVM2_XMLNS;
  // In no namespace. Alone, an unprefixed `instance` is virDomainGetMetadata's answer for our
  // URI; our own prefix undeclared is the element copied out of its document. An unprefixed
  // `instance` in no namespace inside a domain's <metadata> could be anyone's: not ours.
  return prefix === KVM2_XMLNS_PREFIX || (isRoot && prefix === '');
}

function findElement(root: XmlElement): XmlElement | undefined {
  const rootScope = enterScope(root, new Map());
  if (isOurs(root, rootScope, true)) return root;
  let container: XmlElement | undefined;
  let containerScope = rootScope;
  if (root.name === 'domain') {
    container = firstChild(root, 'metadata');
    if (container !== undefined) containerScope = enterScope(container, rootScope);
  } else if (root.name === 'metadata') {
    container = root;
  }
  return container?.children.find((child) =>
    isOurs(child, enterScope(child, containerScope), false),
  );
}

function requiredAttribute(
  element: { readonly attributes: ReadonlyMap<string, string> },
  name: string,
): string {
  const value = element.attributes.get(name);
  if (value === undefined) {
    throw new XmlError('ERR_XML_METADATA_MALFORMED', `kvm2 metadata has no ${name}`, name);
  }
  return value;
}

/**
 * Reads kvm2's metadata from the element alone (as virDomainGetMetadata returns it), from a
 * `<metadata>` element, or from a whole domain XML. null when there is none (a foreign domain);
 * ERR_XML_METADATA_MALFORMED when it is there but incomplete; ERR_XML_MALFORMED when the text is
 * not XML at all.
 */
export function parseMetadata(xml: string): InstanceMetadata | null {
  const attributes = plainElementAttributes(xml) ?? findElement(readXml(xml))?.attributes;
  if (attributes === undefined) return null;
  return metadataFrom(attributes);
}

// virDomainGetMetadata's answer as libvirt prints it: the bare element, attributes in double
// quotes, nothing else. Values without `&` or control characters need no decoding or
// normalisation and are what the parser would read; any other text goes to the parser.
// eslint-disable-next-line no-control-regex -- control characters are what it keeps out
const PLAIN_ELEMENT = /^\s*<instance((?:\s+[A-Za-z]+="[^"<&\x00-\x1f]*")*)\s*\/>\s*$/;
// eslint-disable-next-line no-control-regex -- as above
const PLAIN_ATTRIBUTE = /([A-Za-z]+)="([^"<&\x00-\x1f]*)"/g;

/**
 * The attributes of the bare, entity-free element `<instance …/>`, read without the XML parser
 * (a listing reads one per domain: ~2 µs instead of ~15–30); undefined for any other text,
 * including a namespace declaration or a repeated attribute, which the parser then reads or
 * refuses.
 */
function plainElementAttributes(xml: string): ReadonlyMap<string, string> | undefined {
  const match = PLAIN_ELEMENT.exec(xml);
  if (match === null) return undefined;
  const attributes = new Map<string, string>();
  for (const [, name = '', value = ''] of (match[1] ?? '').matchAll(PLAIN_ATTRIBUTE)) {
    // A namespace declaration decides whose element it is: the parser's question.
    if (name === 'xmlns' || attributes.has(name)) return undefined;
    attributes.set(name, value);
  }
  return attributes;
}

function metadataFrom(attributes: ReadonlyMap<string, string>): InstanceMetadata {
  const element = { attributes };
  const uid = requiredAttribute(element, 'uid');
  if (uid.trim() === '') {
    throw new XmlError('ERR_XML_METADATA_MALFORMED', 'kvm2 metadata has a blank uid', 'uid');
  }
  const createdAt = requiredAttribute(element, 'createdAt');
  if (!isIsoDateTime(createdAt)) {
    throw new XmlError(
      'ERR_XML_METADATA_MALFORMED',
      `kvm2 metadata createdAt is not an ISO 8601 date-time: ${JSON.stringify(createdAt)}`,
      'createdAt',
    );
  }
  return {
    uid,
    createdAt,
    tag: requiredAttribute(element, 'tag'),
    image: requiredAttribute(element, 'image'),
  };
}
