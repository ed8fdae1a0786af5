// Placement by zone from the health hash (queues/placement.ts).
import { describe, expect, it } from 'vitest';
import { placeInZone } from '../../queues/placement.js';
import { Kvm2Error } from '../../src/errors/error.js';
import { parseConfig } from '../../src/provider/config/load.js';
import type { HealthReport, HealthStatus } from '../../src/provider/operations/check.js';

const config = parseConfig({
  hosts: ['a', 'b', 'c', 'd'].map((name, i) => ({
    name,
    uri: `qemu+ssh://root@${name}.example/system`, // one daemon per host
    pool: 'default',
    network: 'default',
    zone: i < 3 ? 'z1' : 'z2',
    concurrency: name === 'b' ? 8 : 4,
  })),
});
const NOW = Date.parse('2026-11-30T12:00:00Z');
const EVERY = 60_000;

function report(host: string, status: HealthStatus, freeGiB: number, ageMs = 1_000): HealthReport {
  return {
    host,
    status,
    reason: status === 'healthy' ? 'ok' : status === 'degraded' ? 'pool_low_space' : 'unreachable',
    message: '',
    checkedAt: new Date(NOW - ageMs).toISOString(),
    durationMs: 5,
    details: { poolAvailableBytes: freeGiB * 2 ** 30 },
  };
}

function place(reports: HealthReport[], zone = 'z1', random = () => 0): string {
  return placeInZone({
    zone,
    hosts: config.hosts,
    reports: new Map(reports.map((r) => [r.host, r])),
    everyMs: EVERY,
    now: NOW,
    random,
  });
}

describe('placeInZone', () => {
  it('picks the healthy host with the most free pool space in the zone (SPEC §3)', () => {
    // d, in another zone, has more than any; b's eight slots do not count against it.
    expect(
      place([
        report('a', 'healthy', 40),
        report('b', 'healthy', 60),
        report('c', 'healthy', 30),
        report('d', 'healthy', 1000),
      ]),
    ).toBe('b');
  });

  it('spreads creates over hosts within 10% of the most free space, never to one far below', () => {
    const GiB = 2 ** 30;
    const near = [
      { ...report('a', 'healthy', 0), details: { poolAvailableBytes: 50 * GiB + 1 } },
      report('c', 'healthy', 50),
      report('b', 'healthy', 46), // 92% of the most: an equal
    ];
    const chosen = new Set([0, 0.34, 0.67, 0.99].map((r) => place(near, 'z1', () => r)));
    expect(chosen).toEqual(new Set(['a', 'b', 'c']));
    const far = [report('a', 'healthy', 100), report('c', 'healthy', 30)];
    expect(new Set([0, 0.5, 0.99].map((r) => place(far, 'z1', () => r)))).toEqual(new Set(['a']));
  });

  it('trusts a report dated ahead of this clock by at most one round', () => {
    expect(place([report('a', 'healthy', 500, -EVERY + 1), report('c', 'healthy', 1)])).toBe('a');
    expect(place([report('a', 'healthy', 500, -EVERY - 1), report('c', 'healthy', 1)])).toBe('c');
  });

  it('prefers healthy over degraded, and takes degraded when nothing else is left', () => {
    expect(place([report('a', 'degraded', 500), report('b', 'healthy', 8)])).toBe('b');
    expect(place([report('a', 'degraded', 5), report('b', 'unhealthy', 500)])).toBe('a');
  });

  it('ignores unhealthy and stale reports (older than three rounds)', () => {
    expect(place([report('a', 'healthy', 500, 3 * EVERY + 1), report('c', 'healthy', 1)])).toBe(
      'c',
    );
  });

  it('no fresh healthy host: a transient error naming the zone', () => {
    const err = (() => {
      try {
        place([report('a', 'unhealthy', 500), report('b', 'healthy', 500, 600_000)]);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(Kvm2Error);
    expect(err).toMatchObject({ code: 'ERR_ZONE_UNAVAILABLE', kind: 'transient' });
    expect((err as Error).message).toBe(
      "request.zone: no host in zone 'z1' can take a create (a: unhealthy (unreachable); b: report 600 s old (stale after 180 s); c: never checked)",
    );
  });

  it('passes over a report that says nothing of the pool (written by something else)', () => {
    const bare = { ...report('a', 'healthy', 0), details: {} };
    expect(place([bare, report('c', 'healthy', 1)])).toBe('c');
    expect(() => place([bare])).toThrow(/a: report without pool space; b: never checked/);
  });

  it('a zone no host is in: permanent', () => {
    expect(() => place([], 'nowhere')).toThrow(/no configured host is in zone 'nowhere'/);
  });
});
