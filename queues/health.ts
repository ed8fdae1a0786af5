// The health hash `<prefix>:health` (SPEC §8): the latest report per host, written by the
// health jobs and read by placement and `kvm2 check`. One field per host holding the report as
// JSON; a host without a field has not been checked yet.
import type { HealthReport } from '../src/provider/operations/check.js';
import { healthKey } from './names.js';
import type { RedisConnection } from './redis.js';

export async function writeHealth(
  redis: RedisConnection,
  prefix: string,
  report: HealthReport,
): Promise<void> {
  await redis.hset(healthKey(prefix), report.host, JSON.stringify(report));
}

/** Every stored report, by host. A field that does not parse is skipped, not fatal. */
export async function readHealth(
  redis: RedisConnection,
  prefix: string,
): Promise<Map<string, HealthReport>> {
  const raw = await redis.hgetall(healthKey(prefix));
  const reports = new Map<string, HealthReport>();
  for (const [host, json] of Object.entries(raw)) {
    let report: unknown;
    try {
      report = JSON.parse(json);
    } catch {
      continue; // written by something else; placement treats the host as unchecked
    }
    if (!isReport(report, host)) continue;
    // Details are what the probe learnt, possibly nothing: a report without them has none.
    const { details } = report as { details?: unknown };
    const known = typeof details === 'object' && details !== null ? report.details : {};
    reports.set(host, { ...report, details: known });
  }
  return reports;
}

/** A report of `host` with the fields placement, the board and `kvm2 check` need to read it. */
function isReport(value: unknown, host: string): value is HealthReport {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    r['host'] === host &&
    typeof r['checkedAt'] === 'string' &&
    (r['status'] === 'healthy' || r['status'] === 'degraded' || r['status'] === 'unhealthy') &&
    typeof r['reason'] === 'string' &&
    typeof r['message'] === 'string'
  );
}

/** Drops the reports of hosts no longer configured, so placement never picks one. */
export async function pruneHealth(
  redis: RedisConnection,
  prefix: string,
  hosts: readonly string[],
): Promise<void> {
  const known = new Set(hosts);
  const fields = await redis.hkeys(healthKey(prefix));
  const stale = fields.filter((f) => !known.has(f));
  if (stale.length > 0) await redis.hdel(healthKey(prefix), ...stale);
}
