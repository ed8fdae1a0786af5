// The Instance kvm2 reports (SPEC §3), and how it is read back from libvirt: identity from the
// kvm2 metadata element (every time: never cached), state from the libvirt state table,
// address from the guest agent, then ARP, then DHCP leases.
import { isIPv4 } from 'node:net';
import { LibvirtError } from '../../libvirt/errors.js';
import { VirErr } from '../../libvirt/error-codes.js';
import type { LibvirtConnection } from '../../libvirt/connection.js';
import {
  DomainGetMetadata,
  DomainGetState,
  DomainInterfaceAddresses,
  type NonnullDomain,
} from '../../libvirt/protocol.gen.js';
import { Kvm2Error } from '../../errors/error.js';
import { formatInstanceId, legacyMacForUid, macForUid } from './ids.js';
import { isNoDomain } from './not-found.js';
import { mapDomainState, type InstanceState } from './state.js';
import { KVM2_XMLNS } from '../xml/metadata.js';
import { parseMetadata } from '../xml/metadata.js';
import type { InstanceMetadata } from '../xml/types.js';

export interface Instance {
  /** `<host>/<name>` */
  readonly id: string;
  readonly host: string;
  readonly name: string;
  readonly uid: string;
  readonly state: InstanceState;
  readonly address?: string | undefined;
  readonly createdAt: string;
  readonly tag: string;
  readonly image: string;
}

const METADATA_ELEMENT = 2; // VIR_DOMAIN_METADATA_ELEMENT
const AFFECT_CURRENT = 0;
const ADDRESS_SOURCES = [
  { source: 1, name: 'agent' }, // VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT
  { source: 2, name: 'arp' }, // …_SRC_ARP
  { source: 0, name: 'lease' }, // …_SRC_LEASE
] as const;
const IPV4 = 0;

interface Io {
  readonly signal?: AbortSignal | undefined;
  /** One of many quick reads sent at once (CallOptions.burst). */
  readonly burst?: boolean | undefined;
}

/**
 * The domain's kvm2 metadata, or null when it has none (a foreign domain). Only libvirt's
 * "metadata not found" means foreign; any other failure propagates.
 */
export async function readMetadata(
  conn: LibvirtConnection,
  dom: NonnullDomain,
  io: Io,
): Promise<InstanceMetadata | null> {
  try {
    const { metadata } = await conn.call(
      DomainGetMetadata,
      { dom, type: METADATA_ELEMENT, uri: KVM2_XMLNS, flags: AFFECT_CURRENT },
      io,
    );
    return parseMetadata(metadata);
  } catch (err) {
    if (err instanceof LibvirtError && err.libvirtCode === VirErr.NO_DOMAIN_METADATA) return null;
    throw err;
  }
}

/** Like readMetadata, but a domain without kvm2 metadata is a permanent refusal. */
export async function requireOwned(
  conn: LibvirtConnection,
  host: string,
  dom: NonnullDomain,
  io: Io,
): Promise<InstanceMetadata> {
  const meta = await readMetadata(conn, dom, io);
  if (meta === null) {
    throw new Kvm2Error(
      'ERR_FOREIGN_DOMAIN',
      `domain '${dom.name}' on host '${host}' has no kvm2 metadata: kvm2 does not touch it`,
    );
  }
  return meta;
}

/**
 * An address worth publishing: an IPv4 literal a guest can be reached at (not unspecified,
 * loopback, link-local, multicast or broadcast). The agent's answer is the guest's word, and a
 * guest can say anything; ARP and leases are the host's view, checked the same way. A
 * link-local 169.254.x.y is what a guest gives itself when DHCP failed: reachable from nowhere
 * off its link, so the instance is still provisioning.
 */
function usableIpv4(addr: string): boolean {
  if (!isIPv4(addr)) return false;
  const [first = 0, second = 0] = addr.split('.').map(Number);
  return first !== 0 && first !== 127 && !(first === 169 && second === 254) && first < 224;
}

/** libvirt's "domain is not running", which every address source answers for a stopped one. */
function isNotRunning(err: unknown): boolean {
  return err instanceof LibvirtError && err.libvirtCode === VirErr.OPERATION_INVALID;
}

/**
 * The first usable IPv4 address a source reports for the domain, trying agent, ARP, leases in
 * turn. The agent's interfaces count only when their MAC is the domain's NIC (`mac`): a guest
 * can list a made-up interface with any address on it.
 */
export async function readAddress(
  conn: LibvirtConnection,
  dom: NonnullDomain,
  mac: string | readonly string[],
  io: Io,
): Promise<string | undefined> {
  const macs: readonly string[] = typeof mac === 'string' ? [mac] : mac;
  for (const { source, name } of ADDRESS_SOURCES) {
    let ifaces;
    try {
      ({ ifaces } = await conn.call(DomainInterfaceAddresses, { dom, source, flags: 0 }, io));
    } catch (err) {
      // No agent configured or answering, no ARP entry, no lease: try the next source. A
      // transport failure is not "no address", nor is the domain gone or stopped since its
      // state was read (a delete or a shutdown in between): those propagate.
      if (err instanceof LibvirtError && !isNoDomain(err) && !isNotRunning(err)) continue;
      throw err;
    }
    for (const iface of ifaces) {
      if (name === 'agent' && !macs.includes(iface.hwaddr?.toLowerCase() ?? '')) continue;
      const addr = iface.addrs.find((a) => a.type === IPV4 && usableIpv4(a.addr));
      if (addr !== undefined) return addr.addr;
    }
  }
  return undefined;
}

/** What a domain is now: libvirt's state and reason, kvm2's state, the address when running. */
export interface LiveState {
  readonly domainState: number;
  readonly reason: number;
  readonly state: InstanceState;
  readonly address?: string | undefined;
}

/**
 * The state and (when running) the address of a domain whose kvm2 uid is `uid`. The address is
 * read only when the table says running: a RUNNING domain whose reason is CRASHED is crashed,
 * whatever address ARP still remembers for it. A domain that stops between the two reads is
 * read again (its state then, without an address); one that vanished is libvirt's no-domain.
 */
export async function readLiveState(
  conn: LibvirtConnection,
  dom: NonnullDomain,
  uid: string,
  io: Io,
): Promise<LiveState> {
  const { state, reason } = await conn.call(DomainGetState, { dom, flags: 0 }, io);
  if (mapDomainState(state, reason, true) !== 'running') return liveState(state, reason);
  let address;
  try {
    // An instance made before the 40-bit MACs has the 24-bit one.
    address = await readAddress(conn, dom, [macForUid(uid), legacyMacForUid(uid)], io);
  } catch (err) {
    if (!isNotRunning(err)) throw err;
    const now = await conn.call(DomainGetState, { dom, flags: 0 }, io);
    return liveState(now.state, now.reason);
  }
  return liveState(state, reason, address);
}

function liveState(domainState: number, reason: number, address?: string): LiveState {
  return {
    domainState,
    reason,
    state: mapDomainState(domainState, reason, address !== undefined),
    ...(address === undefined ? {} : { address }),
  };
}

/** A full read: metadata, state, and (when running) the address. */
export async function readInstance(
  conn: LibvirtConnection,
  host: string,
  dom: NonnullDomain,
  io: Io,
): Promise<Instance> {
  const meta = await requireOwned(conn, host, dom, io);
  const live = await readLiveState(conn, dom, meta.uid, io);
  return toInstance(host, dom.name, meta, live.state, live.address);
}

export function toInstance(
  host: string,
  name: string,
  meta: InstanceMetadata,
  state: InstanceState,
  address?: string,
): Instance {
  return {
    id: formatInstanceId(host, name),
    host,
    name,
    uid: meta.uid,
    state,
    ...(address === undefined ? {} : { address }),
    createdAt: meta.createdAt,
    tag: meta.tag,
    image: meta.image,
  };
}
