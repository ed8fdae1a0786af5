// The generated codecs byte for byte against hand-written XDR, and hostile input rejected with
// XdrError only.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as gen from '../../src/libvirt/protocol.gen.js';
import { XdrError, XdrReader } from '../../src/libvirt/xdr.js';
import {
  bytesOf,
  decodeAll,
  encode,
  hex,
  procedures,
  thrown,
  uuidA,
} from '../harness/protocol-fixtures.js';

describe('generated codecs: byte-exact against hand-written XDR', () => {
  it('DomainLookupByName args: a 5-byte name is padded to 8', () => {
    expect(encode(gen.DomainLookupByName, { name: 'vm-bb' })).toEqual(
      hex(
        '00000005', // name length 5
        '766d2d6262 000000', // "vm-bb" + 3 bytes of padding
      ),
    );
  });

  it('ConnectOpen args: a present and an absent optional name', () => {
    expect(encode(gen.ConnectOpen, { name: 'qemu:///system', flags: 0 })).toEqual(
      hex(
        '00000001', // name present (a 4-byte bool, not 01000000)
        '0000000e', // length 14
        '71656d753a2f2f2f73797374656d 0000', // "qemu:///system" + 2 bytes of padding
        '00000000', // flags
      ),
    );
    expect(encode(gen.ConnectOpen, { name: null, flags: 2 })).toEqual(
      hex(
        '00000000', // name absent
        '00000002', // flags
      ),
    );
  });

  it('void args encode to nothing and void rets decode from nothing', () => {
    expect(encode(gen.ConnectClose, undefined)).toHaveLength(0);
    expect(decodeAll(gen.ConnectClose.decode, Buffer.alloc(0))).toBeUndefined();
  });

  it('DomainGetInfo ret: 32 bytes, unsigned char and short in full words', () => {
    const bytes = hex(
      '00000001', // state: unsigned char 1 (running)
      '0000000000200000', // maxMem: 2097152 KiB
      '0000000000100000', // memory: 1048576 KiB
      '00000002', // nrVirtCpu: unsigned short 2
      '0000001cbe991a14', // cpuTime: 123456789012 ns
    );
    expect(bytes).toHaveLength(32);
    expect(decodeAll(gen.DomainGetInfo.decode, bytes)).toEqual({
      state: 1,
      maxMem: 2097152n,
      memory: 1048576n,
      nrVirtCpu: 2,
      cpuTime: 123456789012n,
    });
  });

  it('StorageVolGetInfo ret: 20 bytes, a sign-extended char', () => {
    const bytes = hex(
      '00000000', // type: char 0 (VIR_STORAGE_VOL_FILE)
      '0000000040000000', // capacity: 1 GiB
      '0000000000310000', // allocation: 3211264 bytes
    );
    expect(bytes).toHaveLength(20);
    const info = decodeAll(gen.StorageVolGetInfo.decode, bytes);
    expect(info).toEqual({ type: 0, capacity: 1073741824n, allocation: 3211264n });
    expect(bytesOf(gen.encodeStorageVolGetInfoRet, info)).toEqual(bytes);
  });

  it('ConnectListAllDomains ret: two domains, then the count', () => {
    const bytes = hex(
      '00000002', // domains: 2 items
      '00000004 766d2d61', //   [0].name "vm-a"
      '00112233445566778899aabbccddeeff', //   [0].uuid (16 bytes, no padding)
      '00000007', //   [0].id 7
      '00000005 766d2d6262000000', //   [1].name "vm-bb" + padding
      'ffeeddccbbaa99887766554433221100', //   [1].uuid
      'ffffffff', //   [1].id -1 (inactive)
      '00000002', // ret 2
    );
    const ret = decodeAll(gen.ConnectListAllDomains.decode, bytes);
    expect(ret).toEqual({
      domains: [
        { name: 'vm-a', uuid: uuidA, id: 7 },
        { name: 'vm-bb', uuid: Buffer.from(uuidA).reverse(), id: -1 },
      ],
      ret: 2,
    });
    expect(bytesOf(gen.encodeConnectListAllDomainsRet, ret)).toEqual(bytes);
  });

  it('DomainInterfaceAddresses ret: hwaddr absent on one interface, present on the other', () => {
    const bytes = hex(
      '00000002', // ifaces: 2 items
      '00000002 6c6f0000', //   [0].name "lo"
      '00000000', //   [0].hwaddr absent
      '00000000', //   [0].addrs: 0 items
      '00000004 65746830', //   [1].name "eth0"
      '00000001', //   [1].hwaddr present
      '00000011 35323a35343a30303a31323a33343a3536000000', //   "52:54:00:12:34:56" + padding
      '00000002', //   [1].addrs: 2 items
      '00000000', //     [0].type 0 (VIR_IP_ADDR_TYPE_IPV4)
      '0000000e 3139322e3136382e3132322e31300000', //     [0].addr "192.168.122.10"
      '00000018', //     [0].prefix 24
      '00000001', //     [1].type 1 (VIR_IP_ADDR_TYPE_IPV6)
      '00000007 666538303a3a3100', //     [1].addr "fe80::1"
      '00000040', //     [1].prefix 64
    );
    const ret = decodeAll(gen.DomainInterfaceAddresses.decode, bytes);
    expect(ret).toEqual({
      ifaces: [
        { name: 'lo', hwaddr: null, addrs: [] },
        {
          name: 'eth0',
          hwaddr: '52:54:00:12:34:56',
          addrs: [
            { type: 0, addr: '192.168.122.10', prefix: 24 },
            { type: 1, addr: 'fe80::1', prefix: 64 },
          ],
        },
      ],
    });
    expect(bytesOf(gen.encodeDomainInterfaceAddressesRet, ret)).toEqual(bytes);
  });

  it('decodeRemoteError: the live "Domain not found" payload (LIBVIRT-RPC-FACTS §2)', () => {
    const bytes = hex(
      '0000002a', // code 42 VIR_ERR_NO_DOMAIN
      '0000000a', // domain 10 VIR_FROM_QEMU
      '00000001', // message present
      '00000032', //   length 50
      '446f6d61696e206e6f7420666f756e643a206e6f20646f6d61696e2077697468206d61746368696e67206e616d65202778270000',
      '00000002', // level 2 VIR_ERR_ERROR
      '00000000', // dom absent
      '00000001', // str1 present
      '00000014 446f6d61696e206e6f7420666f756e643a202573', //   "Domain not found: %s"
      '00000001', // str2 present
      '00000020 6e6f20646f6d61696e2077697468206d61746368696e67206e616d6520277827', //   detail
      '00000000', // str3 absent
      'ffffffff', // int1 -1
      'ffffffff', // int2 -1
      '00000000', // net absent
    );
    const err: gen.RemoteError = decodeAll(gen.decodeRemoteError, bytes);
    expect(err).toEqual({
      code: 42,
      domain: 10,
      message: "Domain not found: no domain with matching name 'x'",
      level: 2,
      dom: null,
      str1: 'Domain not found: %s',
      str2: "no domain with matching name 'x'",
      str3: null,
      int1: -1,
      int2: -1,
      net: null,
    });
    expect(bytesOf(gen.encodeRemoteError, err)).toEqual(bytes);
  });

  it('NodeGetInfo ret: char model[32] is 32 words, not 32 bytes', () => {
    const model = Array.from('x86_64', (c) => c.charCodeAt(0)).concat(
      new Array<number>(26).fill(0),
    );
    const info = {
      model,
      memory: 8n,
      cpus: 4,
      mhz: 2000,
      nodes: 1,
      sockets: 1,
      cores: 2,
      threads: 2,
    };
    const bytes = bytesOf(gen.encodeNodeGetInfoRet, info);
    expect(bytes).toHaveLength(32 * 4 + 8 + 6 * 4);
    expect(bytes.subarray(0, 8)).toEqual(hex('00000078', '00000038')); // 'x', '8'
    expect(decodeAll(gen.NodeGetInfo.decode, bytes)).toEqual(info);
  });
});

describe('generated codecs: hostile input', () => {
  it('rejects every truncation of a valid payload with XdrError', () => {
    const cases: [(r: XdrReader) => unknown, Buffer][] = [
      [
        gen.ConnectListAllDomains.decode,
        bytesOf(gen.encodeConnectListAllDomainsRet, {
          domains: [{ name: 'a', uuid: uuidA, id: 1 }],
          ret: 1,
        }),
      ],
      [
        gen.DomainGetInfo.decode,
        bytesOf(gen.encodeDomainGetInfoRet, {
          state: 1,
          maxMem: 1n,
          memory: 1n,
          nrVirtCpu: 1,
          cpuTime: 1n,
        }),
      ],
      [gen.AuthList.decode, bytesOf(gen.encodeAuthListRet, { types: [0, 2] })],
      [
        gen.decodeDomainInterfaceAddressesRet,
        bytesOf(gen.encodeDomainInterfaceAddressesRet, {
          ifaces: [{ name: 'e', hwaddr: 'm', addrs: [{ type: 0, addr: '1.2.3.4', prefix: 8 }] }],
        }),
      ],
    ];
    for (const [decode, bytes] of cases) {
      for (let n = 0; n < bytes.length; n++) {
        expect(thrown(() => decode(new XdrReader(bytes.subarray(0, n))))).toBeInstanceOf(XdrError);
      }
    }
  });

  it('rejects an array count above its .x limit with XdrError', () => {
    // AuthList: types<REMOTE_AUTH_TYPE_LIST_MAX = 20>, 21 claimed and present.
    const tooMany = Buffer.concat([hex('00000015'), Buffer.alloc(21 * 4)]);
    const err = thrown(() => gen.AuthList.decode(new XdrReader(tooMany)));
    expect(err).toBeInstanceOf(XdrError);
    expect(String(err)).toMatch(/limit of 20/);
    // ConnectListAllDomains: 16385 > REMOTE_DOMAIN_LIST_MAX.
    expect(
      thrown(() => gen.ConnectListAllDomains.decode(new XdrReader(hex('00004001')))),
    ).toBeInstanceOf(XdrError);
    // Within the limit but more than the bytes left could hold (each item is at least 24 bytes).
    expect(
      thrown(() =>
        gen.ConnectListAllDomains.decode(new XdrReader(hex('00000002', '0'.repeat(80)))),
      ),
    ).toBeInstanceOf(XdrError);
  });

  it('rejects a string longer than its limit with XdrError', () => {
    expect(
      thrown(() =>
        gen.decodeRemoteError(new XdrReader(hex('0000002a 0000000a 00000001 ffffffff'))),
      ),
    ).toBeInstanceOf(XdrError);
  });

  it('throws nothing but XdrError on random bytes, for every decoder', () => {
    const decoders: ((r: XdrReader) => unknown)[] = procedures.map((p) => p.decode);
    decoders.push(gen.decodeRemoteError);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat(decoders.length - 1), (bytes, i) => {
        const decode = decoders[i];
        if (decode === undefined) return;
        const err = thrown(() => decode(new XdrReader(Buffer.from(bytes))));
        if (err !== undefined) expect(err).toBeInstanceOf(XdrError);
      }),
      { numRuns: 2000 },
    );
  });
});
