// kvm2's metadata element read back in the shapes libvirt really hands back, and a property
// test that no value breaks or injects XML.
import fc from 'fast-check';
import { XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { buildDomainXml } from '../../src/provider/xml/domain.js';
import {
  KVM2_XMLNS,
  buildMetadata,
  isIsoDateTime,
  parseMetadata,
} from '../../src/provider/xml/metadata.js';
import { type InstanceMetadata } from '../../src/provider/xml/types.js';
import { parseDomainDisks } from '../../src/provider/xml/volume.js';
import {
  child,
  children,
  exactParser,
  expectXmlError,
  metadata,
  plainParser,
  readDomain,
  uefiSpec,
} from '../harness/xml-reading.js';

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

  it('reads the plain element without the XML parser exactly as the parser reads it', () => {
    // parseMetadata reads `<instance a="…"/>` without entities by pattern; the namespaced form
    // always goes through the parser. Both must agree on every value.
    const value = fc.string({ unit: 'grapheme', maxLength: 24 });
    fc.assert(
      fc.property(value, value, value, (uid, tag, image) => {
        fc.pre(uid.trim() !== '');
        const m = { uid, createdAt: '2025-01-31T12:00:00.000Z', tag, image };
        let viaPattern: unknown;
        let viaParser: unknown;
        try {
          viaPattern = parseMetadata(buildMetadata(m));
          viaParser = parseMetadata(buildMetadata(m, { namespaced: true }));
        } catch (err) {
          // A value the builder refuses (a control character) proves nothing here.
          fc.pre(false);
          throw err;
        }
        expect(viaPattern).toEqual(m);
        expect(viaParser).toEqual(m);
      }),
      { numRuns: 300 },
    );
    // The pattern leaves these to the parser: entities, a namespace, a repeated attribute.
    expect(parseMetadata(`<instance ${ours} xmlns="https://example.com/"/>`)).toBeNull();
    expect(() => parseMetadata(`<instance ${ours} tag="again"/>`)).toThrow();
    expect(
      parseMetadata(`<instance uid="a&amp;b" createdAt="2025-01-31T12:00:00Z" tag="t" image="i"/>`),
    ).toMatchObject({ uid: 'a&b' });
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
