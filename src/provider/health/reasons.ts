// What a health report says (SPEC §3 check()): one reason per report, and the one table that
// gives each reason its status. docs/health.md is this table for operators, row for row.
import type { DialReason } from '../../libvirt/transport/dial-error.js';

export type HealthStatus = 'healthy' | 'degraded' | 'unhealthy';

export type HealthReason =
  | 'ok'
  | 'unreachable'
  | 'auth_failed'
  | 'host_key_unknown'
  | 'host_key_mismatch'
  | 'socket_unavailable'
  | 'protocol_error'
  | 'pool_not_found'
  | 'pool_inactive'
  | 'pool_low_space'
  | 'network_not_found'
  | 'network_inactive'
  | 'kvm_unavailable'
  | 'timeout';

/** Facts learnt during the probe; each is set as soon as its answer arrives. */
export interface HealthDetails {
  /** libvirt's library version on the host, e.g. `9.0.0`. */
  libvirtVersion?: string;
  /** The hypervisor's version, e.g. `7.2.22` for QEMU 7.2.22. */
  hypervisorVersion?: string;
  hostname?: string;
  poolCapacityBytes?: number;
  poolAvailableBytes?: number;
  /** Domains of every state (running, paused, shut off, defined only). */
  domainCount?: number;
}

export interface HealthReport {
  readonly host: string;
  readonly zone?: string;
  readonly status: HealthStatus;
  readonly reason: HealthReason;
  /** One line for an operator: what was found, and where. */
  readonly message: string;
  /** ISO 8601, when the report was made. */
  readonly checkedAt: string;
  readonly durationMs: number;
  readonly details: Readonly<HealthDetails>;
}

/**
 * Reason → status. Only a full-ish pool degrades a host (it still takes small creates, and
 * placement prefers hosts with more room); anything that makes a create fail is unhealthy.
 */
export const REASON_STATUS: Readonly<Record<HealthReason, HealthStatus>> = Object.freeze({
  ok: 'healthy',
  pool_low_space: 'degraded',
  unreachable: 'unhealthy',
  auth_failed: 'unhealthy',
  host_key_unknown: 'unhealthy',
  host_key_mismatch: 'unhealthy',
  socket_unavailable: 'unhealthy',
  protocol_error: 'unhealthy',
  pool_not_found: 'unhealthy',
  pool_inactive: 'unhealthy',
  network_not_found: 'unhealthy',
  network_inactive: 'unhealthy',
  kvm_unavailable: 'unhealthy',
  timeout: 'unhealthy',
});

/**
 * When a host has several problems at once the report names the first of these it found: the
 * one that fails a create first (capabilities before storage before networking), and the
 * merely-degrading low space last.
 */
export const FINDING_PRECEDENCE: readonly HealthReason[] = Object.freeze([
  'auth_failed', // a read-only connection: no create gets anywhere
  'kvm_unavailable',
  'pool_not_found',
  'pool_inactive',
  'network_not_found',
  'network_inactive',
  'pool_low_space',
]);

/** A dial failure's reason as a health reason; `aborted` is settled by the caller. */
export function dialHealthReason(reason: Exclude<DialReason, 'aborted'>): HealthReason {
  // An unreadable file asks the operator what a refusal does: look at that file.
  if (reason === 'key_unreadable') return 'auth_failed';
  if (reason === 'known_hosts_unreadable') return 'host_key_unknown';
  return reason === 'forward_prohibited' ? 'socket_unavailable' : reason;
}

export interface Finding {
  readonly reason: HealthReason;
  readonly message: string;
}
