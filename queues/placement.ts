// Placement by zone (SPEC §8): a create that names a zone goes to one of the zone's hosts,
// chosen from the health hash. Only fresh reports count (checked within three health rounds):
// a host whose worker stopped reporting is not trusted to take work. Healthy hosts come first,
// degraded ones (low pool space) only when no healthy host is left; among equals, the one
// with the most free pool space wins. Free space is read once per health round and thin
// overlays barely move it, so hosts within NEAR_TIE of the most are taken as equal and one of
// them is drawn at random: a burst of creates spreads over them instead of all going to a host
// that had a few bytes more. docs/placement.md tells the same.
import type { HostConfig, Kvm2Config } from '../src/provider/config/schema.js';
import type { HealthReport } from '../src/provider/operations/check.js';
import { Kvm2Error } from '../src/errors/error.js';

/** Reports older than this many health rounds are stale. */
export const FRESH_ROUNDS = 3;

/** Hosts with at least this share of the most free space are equals. */
export const NEAR_TIE = 0.9;

export interface PlacementInput {
  readonly zone: string;
  readonly hosts: readonly HostConfig[];
  readonly reports: ReadonlyMap<string, HealthReport>;
  readonly everyMs: number;
  readonly now: number;
  readonly random?: () => number;
}

interface Candidate {
  readonly host: string;
  readonly healthy: boolean;
  readonly free: number;
}

/**
 * The host for a zone request. None configured in the zone: ERR_ZONE_UNRESOLVED (permanent);
 * none with a fresh report that is not unhealthy: ERR_ZONE_UNAVAILABLE (transient), naming
 * why each host was passed over.
 */
export function placeInZone(input: PlacementInput): string {
  const inZone = input.hosts.filter((h) => h.zone === input.zone);
  if (inZone.length === 0) {
    throw new Kvm2Error(
      'ERR_ZONE_UNRESOLVED',
      `request.zone: no configured host is in zone '${input.zone}'`,
    );
  }
  const candidates: Candidate[] = [];
  const passedOver: string[] = [];
  for (const h of inZone) {
    const why = whyNot(input, input.reports.get(h.name));
    if (typeof why === 'string') passedOver.push(`${h.name}: ${why}`);
    else candidates.push({ host: h.name, ...why });
  }
  if (candidates.length === 0) {
    // Transient: the next health round may bring a host back.
    throw new Kvm2Error(
      'ERR_ZONE_UNAVAILABLE',
      `request.zone: no host in zone '${input.zone}' can take a create (${passedOver.join('; ')})`,
    );
  }
  const random = input.random ?? Math.random;
  const pool = candidates.some((c) => c.healthy) ? candidates.filter((c) => c.healthy) : candidates;
  const most = Math.max(...pool.map((c) => c.free));
  const top = pool.filter((c) => c.free >= most * NEAR_TIE);
  const chosen = top[Math.min(top.length - 1, Math.floor(random() * top.length))];
  if (chosen === undefined) throw new RangeError('placement: no candidate left');
  return chosen.host;
}

/** What a host's report makes it, or why it cannot take a create now. */
function whyNot(
  input: PlacementInput,
  report: HealthReport | undefined,
): Omit<Candidate, 'host'> | string {
  if (report === undefined) return 'never checked';
  if (report.status === 'unhealthy') return `unhealthy (${report.reason})`;
  const age = input.now - Date.parse(report.checkedAt);
  const maxAge = FRESH_ROUNDS * input.everyMs;
  // A report from the future is a clock that runs ahead: trusted by one round, no more.
  if (Number.isNaN(age) || age < -input.everyMs) return 'report not dated by this clock';
  if (age > maxAge) {
    return `report ${Math.round(age / 1000)} s old (stale after ${Math.round(maxAge / 1000)} s)`;
  }
  const free = report.details.poolAvailableBytes;
  if (typeof free !== 'number' || !Number.isFinite(free)) return 'report without pool space';
  return { healthy: report.status === 'healthy', free };
}

export type ZoneConfig = Pick<Kvm2Config, 'hosts' | 'health'>;
