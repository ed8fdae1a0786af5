// Which redirects an image download follows (docs/security.md, item 12). An image server, or
// anyone who can answer for it, must not turn the worker into a client of its own network: a
// redirect to the cloud metadata service (169.254.169.254) would make the worker's credentials
// the base image every guest then reads. The rules are pure functions of the hop and the
// addresses its host has; download.ts resolves the addresses and follows the hops, and the
// dispatchers it follows them with check again as they connect, so a name that resolves to
// another address the second time (DNS rebinding) is caught too.
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

export const REDIRECT_POLICY = Object.freeze({
  /** Redirects followed from the configured URL; one more is refused. */
  maxRedirects: 5,
  /** Status codes that redirect; any other 3xx is an answer like a 4xx. */
  statuses: Object.freeze<number[]>([301, 302, 303, 307, 308]),
});

/**
 * `forbidden`: never a redirect's target (link-local, where clouds serve instance metadata, and
 * the metadata addresses outside it). `internal`: loopback, private and shared ranges, which a
 * redirect may reach only from a server that is itself internal. `public`: anything else.
 */
export type AddressClass = 'forbidden' | 'internal' | 'public';

const forbidden = new BlockList();
forbidden.addSubnet('169.254.0.0', 16, 'ipv4');
forbidden.addSubnet('fe80::', 10, 'ipv6');
forbidden.addAddress('fd00:ec2::254', 'ipv6'); // AWS metadata over IPv6
forbidden.addAddress('100.100.100.200', 'ipv4'); // Alibaba Cloud metadata

const internal = new BlockList();
internal.addSubnet('0.0.0.0', 8, 'ipv4'); // "this host": Linux connects 0.0.0.0 to loopback
internal.addSubnet('127.0.0.0', 8, 'ipv4');
internal.addSubnet('10.0.0.0', 8, 'ipv4');
internal.addSubnet('172.16.0.0', 12, 'ipv4');
internal.addSubnet('192.168.0.0', 16, 'ipv4');
internal.addSubnet('100.64.0.0', 10, 'ipv4'); // shared address space (carrier NAT, tailnets)
internal.addAddress('::', 'ipv6');
internal.addAddress('::1', 'ipv6');
internal.addSubnet('fc00::', 7, 'ipv6');

/** NAT64's well-known prefix (RFC 6052): a network with NAT64 carries these to the IPv4 address. */
const nat64 = new BlockList();
nat64.addSubnet('64:ff9b::', 96, 'ipv6');

/** The IPv4 address a NAT64 address (64:ff9b::/96) carries in its last 32 bits. */
function nat64Target(address: string): string {
  const dotted = address.slice(address.lastIndexOf(':') + 1);
  if (isIP(dotted) === 4) return dotted;
  const [head = '', tail = ''] = address.split('::');
  const heads = head === '' ? [] : head.split(':');
  const tails = tail === '' ? [] : tail.split(':');
  const groups = [...heads, ...Array<string>(8 - heads.length - tails.length).fill('0'), ...tails];
  const [high = 0, low = 0] = groups.slice(6).map((g) => Number.parseInt(g, 16));
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/**
 * The class of an IP address: IPv4-mapped IPv6 counts as its IPv4 address, and so does a NAT64
 * address (64:ff9b::a9fe:a9fe reaches 169.254.169.254 where the network translates).
 */
export function addressClass(address: string): AddressClass {
  if (isIP(address) === 6 && nat64.check(address, 'ipv6')) {
    return addressClass(nat64Target(address));
  }
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  if (forbidden.check(address, family)) return 'forbidden';
  if (internal.check(address, family)) return 'internal';
  return 'public';
}

/** A URL's host as an address, or undefined when it is a name. */
export function literalAddress(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) === 0 ? undefined : host;
}

/** A server is internal when every address it has is (a name nobody resolves is not). */
export function isInternalServer(addresses: readonly string[]): boolean {
  return addresses.length > 0 && addresses.every((a) => addressClass(a) !== 'public');
}

export interface RedirectHop {
  /** The URL that answered with the redirect. */
  readonly from: URL;
  /** Its Location, resolved against `from`. */
  readonly to: URL;
  /** 1 for the configured URL's redirect, 2 for the next… */
  readonly count: number;
  /** Whether every address of `from`'s host is internal (isInternalServer). */
  readonly fromInternal: boolean;
  /** The addresses of `to`'s host: the literal, or what it resolves to (empty if nothing). */
  readonly toAddresses: readonly string[];
}

/** Why the hop is refused, or undefined when it may be followed. */
export function redirectRefusal(hop: RedirectHop): string | undefined {
  return hopRefusal(hop) ?? addressRefusal(hop.toAddresses, hop.fromInternal);
}

/** The rules that need no addresses: checked first, so a refused hop costs no DNS lookup. */
export function hopRefusal(hop: Pick<RedirectHop, 'from' | 'to' | 'count'>): string | undefined {
  if (hop.count > REDIRECT_POLICY.maxRedirects) {
    return `more than ${REDIRECT_POLICY.maxRedirects} redirects`;
  }
  if (hop.to.protocol !== 'http:' && hop.to.protocol !== 'https:') {
    return `${hop.to.protocol} is neither http: nor https:`;
  }
  // fetch refused these too: a server must not choose the credentials kvm2 sends.
  if (hop.to.username !== '' || hop.to.password !== '') return 'its Location carries credentials';
  if (hop.from.protocol === 'https:' && hop.to.protocol === 'http:') {
    return 'it leaves https for plain http';
  }
  return undefined;
}

/** Why a target with these addresses is refused, or undefined. */
export function addressRefusal(
  addresses: readonly string[],
  fromInternal: boolean,
): string | undefined {
  const link = addresses.find((a) => addressClass(a) === 'forbidden');
  if (link !== undefined) return `${link} is a link-local or metadata address`;
  const inside = fromInternal ? undefined : addresses.find((a) => addressClass(a) === 'internal');
  if (inside !== undefined) return `${inside} is internal and the redirecting server is not`;
  return undefined;
}

/** What the connection-time check fails a connection with; download.ts names the image. */
export class AddressRefusedError extends Error {
  override readonly name = 'AddressRefusedError';
  constructor(
    readonly hostname: string,
    readonly reason: string,
  ) {
    super(`${hostname}: ${reason}`);
  }
}

/**
 * A `lookup` for the connections that follow a redirect: it resolves the name, refuses it as
 * the hop's check would, and connects to exactly the addresses it checked. (An IP literal
 * never reaches a lookup; download.ts checks those before the request.)
 */
export function checkedLookup(fromInternal: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const all: LookupAllOptions = { ...options, all: true };
    dnsLookup(hostname, all, (err, found: LookupAddress[]) => {
      if (err !== null) {
        callback(err, '', 0);
        return;
      }
      const reason = addressRefusal(
        found.map((a) => a.address),
        fromInternal,
      );
      if (reason !== undefined) {
        callback(new AddressRefusedError(hostname, reason), '', 0);
        return;
      }
      const first = found[0];
      if (options.all === true) {
        (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, found);
      } else if (first === undefined) {
        callback(
          Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }),
          '',
          0,
        );
      } else {
        callback(null, first.address, first.family);
      }
    });
  };
}
