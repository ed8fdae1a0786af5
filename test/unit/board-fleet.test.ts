// The fleet page's HTML (board/fleet.ts): every value from Redis or libvirt is escaped (a
// domain name or a health message is text, never markup), a host's state follows its report's
// status and age, and a host whose listing failed says why.
import { describe, expect, it } from 'vitest';
import { renderHosts, renderPage, type FleetHost } from '../../board/fleet.js';

const NOW = Date.parse('2026-12-02T10:00:00Z');
const EVERY = 60_000;

function host(overrides: Partial<FleetHost> = {}): FleetHost {
  return {
    host: 'h1',
    zone: undefined,
    health: {
      host: 'h1',
      status: 'healthy',
      reason: 'ok',
      message: 'libvirt 9.0.0 answered',
      checkedAt: new Date(NOW - 5_000).toISOString(),
      durationMs: 12,
      details: { poolCapacityBytes: 100 * 2 ** 30, poolAvailableBytes: 25 * 2 ** 30 },
    },
    listing: { instances: [] },
    counts: { active: 1, waiting: 2, delayed: 0, failed: 3 },
    results: [],
    ...overrides,
  };
}

describe('the fleet page HTML', () => {
  it('escapes what it prints: markup in a message, a tag or an error is text', () => {
    const evil = '<img src=x onerror=alert(1)>"\'&';
    const html = renderHosts(
      [
        host({
          health: { ...(host().health as NonNullable<FleetHost['health']>), message: evil },
          listing: {
            instances: [
              {
                id: 'h1/a',
                host: 'h1',
                name: 'a',
                uid: '00000000-0000-4000-8000-000000000000',
                state: 'running',
                createdAt: '2026-12-01T00:00:00Z',
                tag: evil,
                image: evil,
              },
            ],
          },
        }),
        host({ host: 'h2', listing: { error: evil } }),
      ],
      NOW,
      EVERY,
    );
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;');
    expect(html).toContain('could not list: &lt;img');
  });

  it("a host's state: its report's status, stale after three missed rounds, unchecked without one", () => {
    const states = (hosts: FleetHost[]): string[] =>
      [...renderHosts(hosts, NOW, EVERY).matchAll(/data-state="([^"]+)"/g)].map((m) => m[1] ?? '');
    const base = host().health as NonNullable<FleetHost['health']>;
    expect(
      states([
        host(),
        host({
          host: 'h2',
          health: { ...base, host: 'h2', status: 'unhealthy', reason: 'unreachable' },
        }),
        host({
          host: 'h3',
          health: { ...base, host: 'h3', checkedAt: new Date(NOW - 4 * EVERY).toISOString() },
        }),
        host({ host: 'h4', health: undefined }),
      ]),
    ).toEqual(['healthy', 'unhealthy', 'stale', 'unchecked']);
  });

  it('shows pool space and the queue counts, and the page loads its refresh script', () => {
    const html = renderHosts([host()], NOW, EVERY);
    expect(html).toContain('pool: <strong>25.0 GiB</strong> free of 100.0 GiB (25%)');
    expect(html).toMatch(/data-count="failed">3</);
    expect(html).toContain('class="count failed alert"');
    expect(renderPage(html)).toContain('<script src="/fleet/fleet.js" defer></script>');
  });

  it('renders a malformed entry from Redis as unknown: no details, a timestamp not a number', () => {
    const base = host().health as NonNullable<FleetHost['health']>;
    const { details: _details, ...withoutDetails } = base;
    const html = renderHosts(
      [
        host({
          health: withoutDetails as NonNullable<FleetHost['health']>,
          results: [
            {
              streamId: '1-0',
              jobId: 'j1',
              op: 'create',
              outcome: 'failed',
              attempt: 1,
              timestamp: NaN,
              instanceId: 'h1/a',
            },
            {
              streamId: '2-0',
              jobId: 'j2',
              op: 'create',
              outcome: 'succeeded',
              attempt: 1,
              timestamp: NOW - 3_000,
              instanceId: 'h1/b',
            },
          ],
        }),
        host({ host: 'h2' }),
      ],
      NOW,
      EVERY,
    );
    expect(html).toContain('<p class="pool muted">pool: unknown</p>');
    expect(html).toContain('<td>at an unknown time</td>');
    expect(html).toContain('<td>3 s ago</td>');
    expect(html).toContain('data-host="h2"');
  });
});
