// The redirect policy of image downloads (docs/security.md, item 12) on the cases a loopback
// test cannot serve: an https origin, a public origin, resolved addresses. The followed and
// refused hops against real servers are test/integration/image-redirects.test.ts.
import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  AddressRefusedError,
  addressClass,
  checkedLookup,
  isInternalServer,
  redirectRefusal,
  type RedirectHop,
} from '../../src/provider/image/redirects.js';

const PUBLIC = '203.0.113.7';

function hop(fields: Partial<Omit<RedirectHop, 'to'>> & { to: string }): string | undefined {
  return redirectRefusal({
    from: new URL('https://images.example/d.qcow2'),
    count: 1,
    fromInternal: false,
    toAddresses: [PUBLIC],
    ...fields,
    to: new URL(fields.to),
  });
}

describe('address classes', () => {
  it.each([
    ['169.254.169.254', 'forbidden'],
    ['169.254.0.1', 'forbidden'],
    ['fe80::1', 'forbidden'],
    ['febf::1', 'forbidden'],
    ['::ffff:169.254.169.254', 'forbidden'],
    ['fd00:ec2::254', 'forbidden'],
    ['100.100.100.200', 'forbidden'],
    ['127.0.0.1', 'internal'],
    ['127.8.9.10', 'internal'],
    ['0.0.0.0', 'internal'],
    ['::1', 'internal'],
    ['::', 'internal'],
    ['::ffff:127.0.0.1', 'internal'],
    ['10.1.2.3', 'internal'],
    ['172.16.0.1', 'internal'],
    ['172.31.255.255', 'internal'],
    ['192.168.1.1', 'internal'],
    ['100.64.0.1', 'internal'],
    ['fc00::1', 'internal'],
    ['fd12:3456::1', 'internal'],
    ['172.32.0.1', 'public'],
    ['8.8.8.8', 'public'],
    ['2001:db8::1', 'public'],
    // NAT64 (RFC 6052's well-known prefix): the IPv4 address it carries is where it goes.
    ['64:ff9b::a9fe:a9fe', 'forbidden'], // 169.254.169.254
    ['64:ff9b::169.254.169.254', 'forbidden'],
    ['64:ff9b::7f00:1', 'internal'], // 127.0.0.1
    ['64:ff9b::a00:1', 'internal'], // 10.0.0.1
    ['64:ff9b::808:808', 'public'], // 8.8.8.8
  ])('%s is %s', (address, expected) => {
    expect(addressClass(address)).toBe(expected);
  });

  it('a server is internal when all of its addresses are, and a name without any is not', () => {
    expect(isInternalServer(['127.0.0.1', '::1'])).toBe(true);
    expect(isInternalServer(['10.0.0.1', PUBLIC])).toBe(false);
    expect(isInternalServer([])).toBe(false);
  });
});

describe('redirectRefusal', () => {
  it('follows https to https between public servers, five times', () => {
    expect(hop({ to: 'https://cdn.example/x' })).toBeUndefined();
    expect(hop({ to: 'https://cdn.example/x', count: 5 })).toBeUndefined();
  });

  it('refuses a sixth redirect', () => {
    expect(hop({ to: 'https://cdn.example/x', count: 6 })).toBe('more than 5 redirects');
  });

  it('refuses https to http, public or internal', () => {
    expect(hop({ to: 'http://cdn.example/x' })).toBe('it leaves https for plain http');
    expect(hop({ to: 'http://10.0.0.5/x', fromInternal: true, toAddresses: ['10.0.0.5'] })).toBe(
      'it leaves https for plain http',
    );
    expect(hop({ from: new URL('http://a.example/'), to: 'https://b.example/' })).toBeUndefined();
  });

  it('refuses schemes other than http and https', () => {
    expect(hop({ to: 'file:///etc/passwd', toAddresses: [] })).toContain('file:');
    expect(hop({ to: 'ftp://mirror.example/x' })).toContain('ftp:');
  });

  it('refuses a Location with credentials', () => {
    expect(hop({ to: 'https://user:pw@cdn.example/x' })).toBe('its Location carries credentials');
    expect(hop({ to: 'https://token@images.example/x' })).toBe('its Location carries credentials');
  });

  it('refuses link-local targets, from any server, literal or resolved', () => {
    for (const fromInternal of [false, true]) {
      expect(
        hop({ to: 'https://169.254.169.254/', fromInternal, toAddresses: ['169.254.169.254'] }),
      ).toContain('169.254.169.254 is a link-local');
      expect(
        hop({ to: 'https://meta.example/', fromInternal, toAddresses: [PUBLIC, 'fe80::1'] }),
      ).toContain('fe80::1 is a link-local');
    }
  });

  it('refuses an internal target from a public server, allows it from an internal one', () => {
    for (const address of ['127.0.0.1', '::1', '10.0.0.5', '192.168.0.9', 'fd00::5']) {
      expect(hop({ to: 'https://mirror.internal/x', toAddresses: [address] })).toBe(
        `${address} is internal and the redirecting server is not`,
      );
      expect(
        hop({ to: 'https://mirror.internal/x', toAddresses: [address], fromInternal: true }),
      ).toBeUndefined();
    }
    // One internal address among public ones is enough to refuse.
    expect(hop({ to: 'https://cdn.example/', toAddresses: [PUBLIC, '10.0.0.5'] })).toContain(
      '10.0.0.5',
    );
  });

  it('leaves a name nobody resolves to the connection-time check', () => {
    expect(hop({ to: 'https://unresolved.example/', toAddresses: [] })).toBeUndefined();
  });
});

describe('the connection-time lookup', () => {
  function lookup(
    fromInternal: boolean,
    all: boolean,
  ): Promise<{ err: Error | null; found: unknown }> {
    return new Promise((resolve) => {
      checkedLookup(fromInternal)('localhost', { all, family: 4 }, (err, found) =>
        resolve({ err, found }),
      );
    });
  }

  it('refuses what a name resolves to as the hop would (localhost from a public server)', async () => {
    const { err } = await lookup(false, true);
    expect(err).toBeInstanceOf(AddressRefusedError);
    expect(err?.message).toContain('127.0.0.1 is internal');
  });

  it('gives the addresses it checked, in either form', async () => {
    const many = await lookup(true, true);
    expect(many.err).toBeNull();
    expect((many.found as LookupAddress[]).map((a) => a.address)).toContain('127.0.0.1');
    const one = await lookup(true, false);
    expect(one).toEqual({ err: null, found: '127.0.0.1' });
  });
});
