// The fleet page (`/fleet`, issue #16) in a real Chromium: a real worker process checks two
// hosts (h1, the machine's libvirtd through the test sshd; h2, an SSH port nothing listens on),
// the board reads the health hash, the queues, the results stream and h1's libvirt. Shown: both
// hosts with their states, h2 marked unhealthy with its reason, h1's pool space and its running
// instance, the queues' counts and the last results; an instance made after the page loaded
// appears without a reload; a malformed entry in Redis shows as unknown, not as an error page;
// the page is behind the board's authentication and Host check and never carries user-data.
// The test writes a screenshot for review (.cache/fleet-page.png).
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import pino from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kvm2Client } from '../../queues/client.js';
import { readHealth, writeHealth } from '../../queues/health.js';
import { healthKey, resultsKey } from '../../queues/names.js';
import { appendResult } from '../../queues/results.js';
import { startBoard, type BoardServer } from '../../board/server.js';
import { ROOT } from '../harness/build.js';
import { waitUntil } from '../harness/fault-kit.js';
import { freePort } from '../harness/loopback.js';
import { startQueueFleet, TEST_DEFAULTS, type QueueFleet } from '../harness/queue-fleet.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'];
const USERNAME = 'ops';
const PASSWORD = randomUUID();
/** Only inside user-data: seen anywhere on the page, it leaked. */
const SENTINEL = `kvm2-sentinel-${randomUUID()}`;
const SCREENSHOT = path.join(ROOT, '.cache/fleet-page.png');

let fleet: QueueFleet;
let worker: WorkerProcess | undefined;
let board: BoardServer | undefined;
let browser: Browser | undefined;
let client: Kvm2Client;
let overrides: Record<string, unknown> = {};

beforeAll(async () => {
  fleet = await startQueueFleet('flt');
  const [h1] = fleet.configObject()['hosts'] as Record<string, unknown>[];
  const closed = await freePort();
  const h2 = {
    ...h1,
    name: 'h2',
    zone: 'rack-b',
    uri: String(h1?.['uri']).replace(/:(\d+)\//, `:${closed}/`),
  };
  overrides = {
    hosts: [{ ...h1, zone: 'rack-a' }, h2],
    health: { every: '2s', timeout: '1s' },
    // The tiny guest runs no agent: a create would wait the whole address timeout.
    defaults: { ...TEST_DEFAULTS, addressTimeout: '2s' },
    board: { auth: { username: USERNAME, password: PASSWORD } },
  };
  worker = await startWorkerProcess(fleet.writeConfig(overrides));
  client = fleet.client(overrides);
  // A health round has reported on both hosts.
  await waitUntil(
    async () => (await readHealth(fleet.scope.redis, fleet.scope.prefix)).size === 2,
    30_000,
    'health reports of h1 and h2',
  );
  board = await startBoard(fleet.config(overrides), {
    logger: pino({ level: 'silent' }),
    listen: { host: '127.0.0.1', port: 0 },
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await board?.close();
  await client?.close();
  await worker?.stop();
  await fleet?.cleanup();
}, 120_000);

async function openFleet(url = board?.url): Promise<Page> {
  const context = await (browser as Browser).newContext({
    httpCredentials: { username: USERNAME, password: PASSWORD },
  });
  const page = await context.newPage();
  const response = await page.goto(new URL('fleet', url).toString());
  expect(response?.status()).toBe(200);
  return page;
}

describe('the fleet page', () => {
  it('shows each host, marks the unhealthy one, and refreshes without a reload', async () => {
    const name = fleet.name('one');
    const created = await client.create({
      host: 'h1',
      name,
      image: fleet.image,
      tag: 'fleet',
      userData: `#cloud-config\n# ${SENTINEL}\n`,
    });
    expect((await client.waitFor(created.jobId, { timeoutMs: 90_000 })).outcome).toBe('succeeded');
    // A create for h2, which its worker cannot reach: it waits, retried, in h2's queue.
    await client.create({ host: 'h2', name: fleet.name('two'), image: fleet.image });

    const page = await openFleet();
    let navigations = 0;
    page.on('framenavigated', () => (navigations += 1));
    const h1 = page.locator('section.host[data-host="h1"]');
    const h2 = page.locator('section.host[data-host="h2"]');
    await expect.poll(() => h1.getAttribute('data-state')).toBe('healthy');
    expect(await h1.locator('.status').textContent()).toBe('healthy');
    expect(await h1.locator('.zone').textContent()).toBe('zone rack-a');
    expect(await h1.locator('.pool').textContent()).toMatch(
      /^pool: [\d.]+ GiB free of [\d.]+ GiB \(\d+%\)$/,
    );
    expect(await h1.locator('.reason .code').textContent()).toBe('ok');
    expect(await h1.locator('time').first().textContent()).toMatch(/^\d+ s ago$/);
    const row = h1.locator(`tr.instance[data-instance="h1/${name}"]`);
    expect(await row.locator('td.state').textContent()).toBe('running');
    expect(await row.locator('td').nth(2).textContent()).toBe('fleet');
    expect(await h1.locator('tr.result').first().textContent()).toContain('create');
    expect(await h1.locator('tr.result .outcome').first().textContent()).toBe('succeeded');

    // h2: unhealthy, with the health round's reason, its listing failed, its create queued.
    expect(await h2.getAttribute('data-state')).toBe('unhealthy');
    expect(await h2.locator('.status').textContent()).toBe('unhealthy');
    expect(await h2.locator('.reason .code').textContent()).toBe('unreachable');
    expect(await h2.locator('.listing-error').textContent()).toMatch(/^could not list: /);
    const queued = async (): Promise<number> => {
      let n = 0;
      for (const c of ['active', 'waiting', 'delayed']) {
        n += Number(await h2.locator(`[data-count="${c}"]`).textContent());
      }
      return n;
    };
    await expect.poll(queued, { timeout: 20_000 }).toBe(1);
    expect(await page.locator('.summary').getAttribute('data-not-healthy')).toBe('1');

    // A second instance, made after the page loaded, shows up by the page's own refresh.
    const later = fleet.name('later');
    const second = await client.create({
      host: 'h1',
      name: later,
      image: fleet.image,
      tag: 'fleet',
    });
    expect((await client.waitFor(second.jobId, { timeoutMs: 90_000 })).outcome).toBe('succeeded');
    await expect
      .poll(() => h1.locator(`tr.instance[data-instance="h1/${later}"]`).count(), {
        timeout: 20_000,
      })
      .toBe(1);
    expect(navigations).toBe(0);
    expect(Number(await page.locator('#fleet').getAttribute('data-refreshes'))).toBeGreaterThan(0);

    const html = await page.content();
    expect(html).not.toContain(SENTINEL);
    await mkdir(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    process.stdout.write(`[board-fleet] screenshot: ${SCREENSHOT}\n`);
    await page.context().close();
  }, 240_000);

  it('shows a malformed result or health report as unknown, and the rest as usual', async () => {
    // A prefix of its own, which no worker writes: the entries stay as the test made them.
    const prefix = `${fleet.scope.prefix}-malformed`;
    const redis = fleet.scope.redis;
    await writeHealth(redis, prefix, {
      host: 'h1',
      status: 'healthy',
      reason: 'ok',
      message: 'libvirt answered',
      checkedAt: new Date().toISOString(),
      durationMs: 5,
      details: { poolCapacityBytes: 16 * 2 ** 30, poolAvailableBytes: 8 * 2 ** 30 },
    });
    // Written by something else: no details.
    await redis.hset(
      healthKey(prefix),
      'h2',
      JSON.stringify({
        host: 'h2',
        status: 'unhealthy',
        reason: 'unreachable',
        message: 'ssh: connection refused',
        checkedAt: new Date().toISOString(),
        durationMs: 7,
      }),
    );
    await appendResult(redis, prefix, {
      jobId: 'malformed-good',
      op: 'create',
      outcome: 'succeeded',
      attempt: 1,
      timestamp: Date.now(),
      instanceId: 'h1/good',
    });
    // A timestamp that is not a number, newer than the good result.
    await redis.xadd(
      resultsKey(prefix),
      '*',
      ...['jobId', 'malformed-bad', 'op', 'delete', 'outcome', 'failed', 'attempt', '1'],
      ...['timestamp', 'x', 'instanceId', 'h1/bad'],
    );
    const other = await startBoard(
      fleet.config({ ...overrides, redis: { url: fleet.scope.url, prefix } }),
      {
        logger: pino({ level: 'silent' }),
        listen: { host: '127.0.0.1', port: 0 },
      },
    );
    try {
      const page = await openFleet(other.url);
      const h1 = page.locator('section.host[data-host="h1"]');
      const h2 = page.locator('section.host[data-host="h2"]');
      expect(await h1.getAttribute('data-state')).toBe('healthy');
      expect(await h1.locator('.pool').textContent()).toBe('pool: 8.0 GiB free of 16.0 GiB (50%)');
      const rows = h1.locator('tr.result');
      expect(await rows.count()).toBe(2);
      expect(await rows.nth(0).locator('td').first().textContent()).toBe('at an unknown time');
      expect(await rows.nth(0).locator('.outcome').textContent()).toBe('failed');
      expect(await rows.nth(1).locator('td').first().textContent()).toMatch(/^\d+ s ago$/);
      expect(await rows.nth(1).locator('.outcome').textContent()).toBe('succeeded');
      expect(await h2.getAttribute('data-state')).toBe('unhealthy');
      expect(await h2.locator('.reason .code').textContent()).toBe('unreachable');
      expect(await h2.locator('.pool').textContent()).toBe('pool: unknown');
      await page.context().close();
      const auth = `Basic ${Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64')}`;
      const fragment = await fetch(new URL('fleet/hosts', other.url), {
        headers: { authorization: auth },
      });
      expect(fragment.status).toBe(200);
    } finally {
      await other.close();
    }
  }, 60_000);

  it("is behind the board's authentication and Host check", async () => {
    const url = new URL('fleet', board?.url).toString();
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(new URL('fleet/hosts', board?.url))).status).toBe(401);
    const auth = `Basic ${Buffer.from(`${USERNAME}:${PASSWORD}`).toString('base64')}`;
    expect((await fetch(url, { headers: { authorization: auth } })).status).toBe(200);
    // A name that is not the board's (DNS rebinding): refused before anything is read.
    const target = new URL(url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          headers: { host: 'attacker.example', authorization: auth },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.once('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });
});
