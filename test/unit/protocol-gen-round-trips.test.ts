// Round trips of random values through the generated codecs, Unicode strings included.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as gen from '../../src/libvirt/protocol.gen.js';
import { XdrReader, XdrWriter } from '../../src/libvirt/xdr.js';
import { bytesOf, decodeAll } from '../harness/protocol-fixtures.js';

describe('generated codecs: round trips', () => {
  // 'binary' covers all of Unicode (astral planes included, lone surrogates excluded).
  const text = fc.string({ unit: 'binary', maxLength: 40 });
  const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
  const uint32 = fc.integer({ min: 0, max: 0xffffffff });
  const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
  const uuid = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((a) => Buffer.from(a));
  const domain = fc.record({ name: text, uuid, id: int32 });
  const network = fc.record({ name: text, uuid });
  const optional = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(a, { nil: null });

  function roundTrips<T>(
    arb: fc.Arbitrary<T>,
    enc: (w: XdrWriter, v: T) => void,
    dec: (r: XdrReader) => T,
  ): void {
    fc.assert(
      fc.property(arb, (value) => {
        const w = new XdrWriter(8);
        enc(w, value);
        const bytes = Buffer.from(w.finish());
        expect(bytes.length % 4).toBe(0);
        expect(decodeAll(dec, bytes)).toEqual(value);
      }),
      { numRuns: 300 },
    );
  }

  it('RemoteError', () => {
    const error = fc.record({
      code: int32,
      domain: int32,
      message: optional(text),
      level: int32,
      dom: optional(domain),
      str1: optional(text),
      str2: optional(text),
      str3: optional(text),
      int1: int32,
      int2: int32,
      net: optional(network),
    });
    roundTrips(error, gen.encodeRemoteError, gen.decodeRemoteError);
  });

  it('DomainInterfaceAddressesRet (arrays of structs with arrays and optionals)', () => {
    const iface = fc.record({
      name: text,
      hwaddr: optional(text),
      addrs: fc.array(fc.record({ type: int32, addr: text, prefix: uint32 }), { maxLength: 4 }),
    });
    roundTrips(
      fc.record({ ifaces: fc.array(iface, { maxLength: 4 }) }),
      gen.encodeDomainInterfaceAddressesRet,
      gen.decodeDomainInterfaceAddressesRet,
    );
  });

  it('ConnectListAllDomainsRet and DomainGetInfoRet (bigints, unsigned words)', () => {
    roundTrips(
      fc.record({ domains: fc.array(domain, { maxLength: 5 }), ret: uint32 }),
      gen.encodeConnectListAllDomainsRet,
      gen.decodeConnectListAllDomainsRet,
    );
    roundTrips(
      fc.record({ state: uint32, maxMem: u64, memory: u64, nrVirtCpu: uint32, cpuTime: u64 }),
      gen.encodeDomainGetInfoRet,
      gen.decodeDomainGetInfoRet,
    );
  });

  it('StorageVolCreateXMLFromArgs and DomainSetMetadataArgs (nested structs, optionals)', () => {
    roundTrips(
      fc.record({
        pool: network,
        xml: text,
        clonevol: fc.record({ pool: text, name: text, key: text }),
        flags: uint32,
      }),
      gen.encodeStorageVolCreateXMLFromArgs,
      gen.decodeStorageVolCreateXMLFromArgs,
    );
    roundTrips(
      fc.record({
        dom: domain,
        type: int32,
        metadata: optional(text),
        key: optional(text),
        uri: optional(text),
        flags: uint32,
      }),
      gen.encodeDomainSetMetadataArgs,
      gen.decodeDomainSetMetadataArgs,
    );
  });

  // TextDecoder drops a leading U+FEFF unless told { ignoreBOM: true }.
  it('keeps a string that starts with U+FEFF', () => {
    const bytes = bytesOf(gen.encodeDomainLookupByNameArgs, { name: '\uFEFFvm' });
    expect(decodeAll(gen.decodeDomainLookupByNameArgs, bytes)).toEqual({
      name: '\uFEFFvm',
    });
  });
});
