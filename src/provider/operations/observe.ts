// What a host's watcher reads after an event or a reconnect: a kvm2 domain's identity (its
// metadata, read every time), its state by the one table (docs/states.md) and, when it runs,
// its address. Foreign domains are never observed: `'foreign'`, like a domain gone by the time
// it is read (`'gone'`), tells the watcher only that there is nothing of kvm2's to report.
import type { LibvirtConnection } from '../../libvirt/connection.js';
import type { NonnullDomain } from '../../libvirt/protocol.gen.js';
import { formatInstanceId } from '../core/ids.js';
import { readLiveState, readMetadata } from '../core/instance.js';
import { isNoDomain } from '../core/not-found.js';
import { DomainState, type InstanceState } from '../core/state.js';

export interface Observation {
  readonly host: string;
  readonly name: string;
  readonly instanceId: string;
  readonly uid: string;
  readonly state: InstanceState;
  readonly address?: string | undefined;
  /**
   * Defined and never started (SHUTOFF with reason UNKNOWN): a create between its define and
   * its start, not an instance that stopped.
   */
  readonly fresh: boolean;
  /**
   * Paused while qemu starts (PAUSED with reason STARTING_UP): a start under way, whose
   * `started` lifecycle event is still to come.
   */
  readonly startingUp: boolean;
}

interface Io {
  readonly signal?: AbortSignal | undefined;
}

const SHUTOFF_UNKNOWN = 0; // VIR_DOMAIN_SHUTOFF_UNKNOWN
const PAUSED_STARTING_UP = 11; // VIR_DOMAIN_PAUSED_STARTING_UP

/** The domain as it is now: 'foreign' without kvm2 metadata, 'gone' when it no longer exists. */
export async function observeDomain(
  conn: LibvirtConnection,
  host: string,
  dom: NonnullDomain,
  io: Io = {},
): Promise<Observation | 'foreign' | 'gone'> {
  try {
    const meta = await readMetadata(conn, dom, io);
    if (meta === null) return 'foreign';
    const live = await readLiveState(conn, dom, meta.uid, io);
    return {
      host,
      name: dom.name,
      instanceId: formatInstanceId(host, dom.name),
      uid: meta.uid,
      state: live.state,
      ...(live.address === undefined ? {} : { address: live.address }),
      fresh: live.domainState === DomainState.SHUTOFF && live.reason === SHUTOFF_UNKNOWN,
      startingUp: live.domainState === DomainState.PAUSED && live.reason === PAUSED_STARTING_UP,
    };
  } catch (err) {
    if (isNoDomain(err)) return 'gone';
    throw err;
  }
}
