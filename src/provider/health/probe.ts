// The calls of one health probe on an open connection. Everything is asked at once (the
// connection pipelines them), and every answer is written into the report's details as it
// arrives, so a probe cut short by its deadline, or one that finds the pool missing, still
// says which libvirt answered.
import { isLibvirtCode, LibvirtError } from '../../libvirt/errors.js';
import type { LibvirtConnection } from '../../libvirt/connection.js';
import { VirErr } from '../../libvirt/error-codes.js';
import type { Procedure } from '../../libvirt/procedure.js';
import {
  ConnectGetCapabilities,
  ConnectGetHostname,
  ConnectGetLibVersion,
  ConnectGetVersion,
  ConnectListAllDomains,
  NetworkIsActive,
  NetworkLookupByName,
  StoragePoolGetInfo,
  StoragePoolIsActive,
  StoragePoolLookupByName,
  StoragePoolRefresh,
  type NonnullStoragePool,
} from '../../libvirt/protocol.gen.js';
import type { HealthConfig, HostConfig } from '../config/schema.js';
import { GUEST_ARCH, guestDomainTypes } from './capabilities.js';
import { FINDING_PRECEDENCE, type Finding, type HealthDetails } from './reasons.js';

/** What the probe has learnt and is waiting for; check() reads it when the deadline fires. */
export interface ProbeProgress {
  readonly details: HealthDetails;
  /** Procedures on the wire (or queued) right now. */
  readonly waitingFor: Set<string>;
}

/** libvirt's packed version number (major * 1e6 + minor * 1e3 + release) as `9.0.0`. */
export function formatVersion(packed: bigint): string {
  return `${packed / 1_000_000n}.${(packed / 1000n) % 1000n}.${packed % 1000n}`;
}

/** Bytes as GiB with two decimals, the unit `virsh pool-info` uses for a pool. */
export function formatGiB(bytes: number | bigint): string {
  return `${(Number(bytes) / 2 ** 30).toFixed(2)} GiB`;
}

export class HostProbe {
  constructor(
    private readonly conn: LibvirtConnection,
    private readonly host: HostConfig,
    private readonly health: HealthConfig,
    private readonly signal: AbortSignal,
    private readonly progress: ProbeProgress,
  ) {}

  /**
   * Resolves with the most pressing finding, or `ok`. Rejects with the first call that failed
   * unexpectedly (link lost, deadline, an error libvirt was not expected to send).
   */
  async run(): Promise<Finding> {
    const d = this.progress.details;
    const settled = await Promise.allSettled([
      this.call(ConnectGetLibVersion, undefined).then(({ libVer }) => {
        d.libvirtVersion = formatVersion(libVer);
      }),
      this.call(ConnectGetVersion, undefined).then(({ hvVer }) => {
        d.hypervisorVersion = formatVersion(hvVer);
      }),
      this.call(ConnectGetHostname, undefined).then(({ hostname }) => {
        d.hostname = hostname;
      }),
      // need_results 0: the daemon sends the count alone, not the domains.
      this.call(ConnectListAllDomains, { needResults: 0, flags: 0 }).then(({ ret }) => {
        d.domainCount = ret;
      }),
      this.checkDomainType(),
      this.checkPool(),
      this.checkNetwork(),
    ]);
    const findings: Finding[] = [];
    for (const outcome of settled) {
      if (outcome.status === 'rejected') throw outcome.reason;
      if (outcome.value !== undefined) findings.push(outcome.value);
    }
    for (const reason of FINDING_PRECEDENCE) {
      const finding = findings.find((f) => f.reason === reason);
      if (finding !== undefined) return finding;
    }
    // A finding the precedence does not rank still outranks ok.
    return findings[0] ?? { reason: 'ok', message: this.summary() };
  }

  private summary(): string {
    const d = this.progress.details;
    const pool =
      d.poolAvailableBytes === undefined || d.poolCapacityBytes === undefined
        ? ''
        : `; pool ${this.host.pool} has ${formatGiB(d.poolAvailableBytes)} free of ${formatGiB(d.poolCapacityBytes)}`;
    return `libvirt ${d.libvirtVersion ?? '?'} on ${d.hostname ?? '?'} answered${pool}; ${d.domainCount ?? '?'} domains`;
  }

  /** `kvm` hosts need KVM offered for x86_64 guests; `qemu` (TCG) runs anywhere. */
  private async checkDomainType(): Promise<Finding | undefined> {
    if (this.host.domainType !== 'kvm') return undefined;
    const { capabilities } = await this.call(ConnectGetCapabilities, undefined);
    const types = guestDomainTypes(capabilities);
    if (types.includes('kvm')) return undefined;
    const offered = types.length === 0 ? 'none' : types.join(', ');
    return {
      reason: 'kvm_unavailable',
      message: `domainType is kvm but the host offers no kvm domains for ${GUEST_ARCH} hvm guests (offered: ${offered}); check /dev/kvm and the kvm kernel modules, or set domainType: qemu`,
    };
  }

  private async checkPool(): Promise<Finding | undefined> {
    const name = this.host.pool;
    let pool;
    try {
      ({ pool } = await this.call(StoragePoolLookupByName, { name }));
    } catch (err) {
      if (!isLibvirtCode(err, VirErr.NO_STORAGE_POOL)) throw err;
      return { reason: 'pool_not_found', message: `storage pool '${name}' does not exist` };
    }
    const { active } = await this.call(StoragePoolIsActive, { pool });
    if (active === 0) {
      return {
        reason: 'pool_inactive',
        message: `storage pool '${name}' is defined but not active (virsh pool-start ${name})`,
      };
    }
    const refused = await this.refresh(name, pool);
    if (refused !== undefined) return refused;
    const info = await this.call(StoragePoolGetInfo, { pool });
    const d = this.progress.details;
    d.poolCapacityBytes = Number(info.capacity);
    d.poolAvailableBytes = Number(info.available);
    const threshold = this.health.poolLowSpaceBytes;
    if (info.available < BigInt(threshold)) {
      return {
        reason: 'pool_low_space',
        message: `storage pool '${name}' has ${formatGiB(info.available)} free of ${formatGiB(info.capacity)}, below health.poolLowSpaceBytes (${formatGiB(threshold)})`,
      };
    }
    return undefined;
  }

  /**
   * `virsh pool-refresh`, before the free space is read: libvirt's figures are those of its last
   * refresh or volume change, and overlays grow as their guests write. It is also the probe's
   * one write: a read-only connection (libvirtd's `-ro` socket) answers every read and refuses
   * every create. libvirt stops a pool whose refresh fails (its storage went away); one busy
   * with an upload or a build refuses the refresh, and keeps its last figures.
   */
  private async refresh(name: string, pool: NonnullStoragePool): Promise<Finding | undefined> {
    try {
      await this.call(StoragePoolRefresh, { pool, flags: 0 });
      return undefined;
    } catch (err) {
      if (!(err instanceof LibvirtError)) throw err;
      if (err.libvirtCode === VirErr.OPERATION_DENIED) {
        return {
          reason: 'auth_failed',
          message: `libvirtd took the connection as read-only (${err.message}): every create would be refused; point the URI's socket= at the read-write socket`,
        };
      }
      const { active } = await this.call(StoragePoolIsActive, { pool });
      if (active !== 0) return undefined;
      return {
        reason: 'pool_inactive',
        message: `storage pool '${name}' could not be refreshed and libvirt stopped it (${err.message}); bring its storage back, then virsh pool-start ${name}`,
      };
    }
  }

  /** Hosts on a bridge: nothing to ask libvirt (a host bridge is not a libvirt object). */
  private async checkNetwork(): Promise<Finding | undefined> {
    const name = this.host.network;
    if (name === undefined) return undefined;
    let net;
    try {
      ({ net } = await this.call(NetworkLookupByName, { name }));
    } catch (err) {
      if (!isLibvirtCode(err, VirErr.NO_NETWORK)) throw err;
      return { reason: 'network_not_found', message: `network '${name}' does not exist` };
    }
    const { active } = await this.call(NetworkIsActive, { net });
    if (active !== 0) return undefined;
    return {
      reason: 'network_inactive',
      message: `network '${name}' is defined but not active (virsh net-start ${name})`,
    };
  }

  private async call<A, R>(proc: Procedure<A, R>, args: A): Promise<R> {
    const waiting = this.progress.waitingFor;
    waiting.add(proc.name);
    try {
      return await this.conn.call(proc, args, { signal: this.signal });
    } finally {
      waiting.delete(proc.name);
    }
  }
}
