// Placement by zone (SPEC §8): a create that names a zone goes to one of the zone's hosts,
// chosen from the health hash. Only fresh reports count (checked within three health rounds):
// a host whose worker stopped reporting is not trusted to take work. Healthy hosts come first,
// degraded ones (low pool space) only when no healthy host is left; among equals, the one
// with the most free pool space per configured slot wins, ties broken at random so that a
// burst of creates spreads. docs/placement.md tells the same.
import type { HostConfig, Kvm2Config } from '../src/provider/config/schema.js';
import type { HealthReport } from '../src/provider/operations/check.js';
import { Kvm2Error } from '../src/errors/error.js';

/** Reports older than this many health rounds are stale. */
export const FRESH_ROUNDS = 3;

export interface PlacementInput {
  readonly zone: string;
  readonly hosts: readonly HostConfig[];
  readonly reports: ReadonlyMap<string, HealthReport>;
  readonly everyMs: number;
  readonly now: number;
  readonly random?: () => number;
}

/**
 * The host for a zone request. None configured in the zone: ERR_ZONE_UNRESOLVED (permanent);
 * none with a fresh healthy report: ERR_ZONE_UNAVAILABLE (transient).
 */
export function placeInZone(input: PlacementInput): string {
  const inZone = input.hosts.filter((h) => h.zone === input.zone);
  if (inZone.length === 0) {
    throw new Kvm2Error(
      'ERR_ZONE_UNRESOLVED',
      `request.zone: no configured host is in zone '${input.zone}'`,
    );
  }
  const maxAge = FRESH_ROUNDS * input.everyMs;
  const candidates = inZone.flatMap((h) => {
    const report = input.reports.get(h.name);
    if (report === undefined || report.status === 'unhealthy') return [];
    const age = input.now - Date.parse(report.checkedAt);
    if (!(age <= maxAge)) return [];
    const free = report.details.poolAvailableBytes ?? 0;
    return [{ host: h.name, healthy: report.status === 'healthy', score: free / h.concurrency }];
  });
  if (candidates.length === 0) {
    // Transient: the next health round may bring a host back.
    throw new Kvm2Error(
      'ERR_ZONE_UNAVAILABLE',
      `request.zone: no host in zone '${input.zone}' has a fresh healthy report (${inZone.length} configured)`,
    );
  }
  const random = input.random ?? Math.random;
  const pool = candidates.some((c) => c.healthy) ? candidates.filter((c) => c.healthy) : candidates;
  const best = Math.max(...pool.map((c) => c.score));
  const top = pool.filter((c) => c.score === best);
  const chosen = top[Math.min(top.length - 1, Math.floor(random() * top.length))];
  if (chosen === undefined) throw new RangeError('placement: no candidate left');
  return chosen.host;
}

export type ZoneConfig = Pick<Kvm2Config, 'hosts' | 'health'>;
