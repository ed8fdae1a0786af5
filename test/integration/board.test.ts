// The dashboard (`kvm2 board`) in a real Chromium against the real Redis: it lists every kvm2
// queue, shows a create's user-data and network-config as [redacted] and sends them in no
// response, asks for credentials, and refuses in read-only mode a retry that a writable board
// performs. No kvm2 worker runs: jobs wait in their queues, one is failed by a test worker.
import { randomBytes, randomUUID } from 'node:crypto';
import { Queue, UnrecoverableError } from 'bullmq';
import pino from 'pino';
import {
  chromium,
  type Browser,
  type BrowserContext,
  type Locator,
  type Page,
} from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kvm2Client, type EnqueuedCreate } from '../../queues/client.js';
import { GC_QUEUE, HEALTH_QUEUE, hostQueueName } from '../../queues/names.js';
import { REDACTED } from '../../queues/registry.js';
import { parseConfig } from '../../src/provider/config/load.js';
import { startBoard, type BoardServer } from '../../board/server.js';
import { failOneJob } from '../harness/careless-worker.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const HOSTS = ['h1', 'h2'];
const USERNAME = 'ops';
const PASSWORD = randomBytes(12).toString('hex');
/** Appears only inside user-data and network-config: finding it anywhere is a leak. */
const SENTINEL = `kvm2-sentinel-${randomUUID()}`;
const USER_DATA = `#cloud-config\nwrite_files:\n  - path: /etc/x\n    content: ${SENTINEL}-ud\n`;
const NETWORK_CONFIG = `version: 2\n# ${SENTINEL}-nc\n`;

let scope: RedisScope;
let client: Kvm2Client;
let readOnlyBoard: BoardServer;
let writableBoard: BoardServer;
let browser: Browser;
/** A create waiting in host.h1. */
let waiting: EnqueuedCreate;
/** A create in host.h2 that a careless worker failed, quoting the user-data. */
let failed: EnqueuedCreate;
const cleanups: (() => Promise<unknown>)[] = [];

function configFor(readOnly: boolean) {
  return parseConfig({
    hosts: HOSTS.map((name) => ({
      name,
      // One daemon a host (docs/configuration.md); these tests dial none of them.
      uri: `qemu+unix:///system?socket=/run/kvm2-absent/${name}-sock`,
      pool: 'default',
      network: 'default',
    })),
    images: { 'debian-12': { url: 'http://127.0.0.1:9/debian-12.qcow2' } },
    redis: { url: scope.url, prefix: scope.prefix },
    board: { auth: { username: USERNAME, password: PASSWORD }, readOnly },
  });
}

async function startTestBoard(readOnly: boolean): Promise<BoardServer> {
  const board = await startBoard(configFor(readOnly), {
    logger: pino({ level: 'silent' }),
    listen: { host: '127.0.0.1', port: 0 },
  });
  cleanups.push(() => board.close());
  return board;
}

function create(host: string, name: string): Promise<EnqueuedCreate> {
  return client.create({
    host,
    name,
    image: 'debian-12',
    tag: 'board-test',
    userData: USER_DATA,
    networkConfig: NETWORK_CONFIG,
  });
}

/** The failure a buggy worker might produce: its log line and error quote the user-data. */
function failWithUserDataInError(host: string): Promise<void> {
  return failOneJob(scope, host, async (job) => {
    await job.log(`rendering seed from ${job.data.userData}`);
    throw new UnrecoverableError(`cloud-init rejected user-data:\n${job.data.userData}`);
  });
}

function hostQueue(host: string): Queue {
  const queue = new Queue(hostQueueName(host), { connection: scope.redis, prefix: scope.prefix });
  cleanups.push(() => queue.close());
  return queue;
}

/** A job scheduler whose template carries a secret field: bull-board lists templates raw. */
async function addHealthScheduler(): Promise<void> {
  const queue = new Queue(HEALTH_QUEUE, { connection: scope.redis, prefix: scope.prefix });
  cleanups.push(() => queue.close());
  await queue.upsertJobScheduler(
    'health-h1',
    { every: 3_600_000 },
    { name: 'health', data: { host: 'h1', userData: USER_DATA } },
  );
}

function authHeader(password = PASSWORD): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${USERNAME}:${password}`).toString('base64')}` };
}

/** Runs every step even when one throws; rethrows the first failure. */
async function closeAll(steps: readonly (() => Promise<unknown>)[]): Promise<void> {
  const results = await Promise.allSettled(steps.map((step) => step()));
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
}

beforeAll(async () => {
  scope = await redisScope('board');
  client = new Kvm2Client({ redisUrl: scope.url, prefix: scope.prefix });
  waiting = await create('h1', 'web-1');
  failed = await create('h2', 'web-2');
  await failWithUserDataInError('h2');
  await addHealthScheduler();
  readOnlyBoard = await startTestBoard(true);
  writableBoard = await startTestBoard(false);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  try {
    await closeAll([
      async () => browser?.close(),
      ...cleanups.reverse(),
      async () => client?.close(),
    ]);
  } finally {
    await scope?.cleanup();
  }
});

/** Waits until the element shows (playwright-core has no expect of its own). */
async function visible(locator: Locator): Promise<void> {
  await locator.waitFor({ state: 'visible', timeout: 10_000 });
}

interface Recorded {
  readonly url: string;
  readonly body: string;
}

/** A page with the board's credentials, recording the body of every response it receives. */
async function recordingPage(): Promise<{
  page: Page;
  context: BrowserContext;
  bodies: () => Promise<Recorded[]>;
}> {
  const context = await browser.newContext({
    httpCredentials: { username: USERNAME, password: PASSWORD },
  });
  const page = await context.newPage();
  const pending: Promise<Recorded>[] = [];
  page.on('response', (response) => {
    pending.push(
      response
        .text()
        .catch(() => '')
        .then((body) => ({ url: response.url(), body })),
    );
  });
  return { page, context, bodies: () => Promise.all(pending) };
}

describe('board in Chromium', () => {
  it('lists every kvm2 queue', async () => {
    const { page, context } = await recordingPage();
    try {
      await page.goto(readOnlyBoard.url);
      for (const name of [...HOSTS.map(hostQueueName), GC_QUEUE, HEALTH_QUEUE]) {
        await visible(page.getByText(name, { exact: true }).first());
      }
    } finally {
      await context.close();
    }
  });

  it('shows user-data and network-config as [redacted] and sends them nowhere', async () => {
    const { page, context, bodies } = await recordingPage();
    try {
      await page.goto(`${readOnlyBoard.url}queue/${hostQueueName('h1')}/${waiting.jobId}`);
      await visible(page.getByText(REDACTED).first());
      const waitingText = await page.content();

      await page.goto(`${readOnlyBoard.url}queue/${hostQueueName('h2')}/${failed.jobId}`);
      await page.getByRole('tab', { name: 'Logs' }).click();
      await visible(page.getByText('rendering seed from'));
      await page.getByRole('tab', { name: 'Error' }).click();
      await visible(page.getByText('cloud-init rejected').first());
      const failedText = await page.content();

      await page.goto(`${readOnlyBoard.url}job-schedulers`);
      await visible(page.getByText('health-h1').first());
      const schedulersText = await page.content();

      const recorded = await bodies();
      const api = recorded.filter((r) => new URL(r.url).pathname.startsWith('/api/'));
      // The checks below would pass vacuously if the page never fetched these.
      expect(
        api.some((r) => r.url.includes(`/${waiting.jobId}`) && r.body.includes(REDACTED)),
      ).toBe(true);
      expect(api.some((r) => r.url.endsWith(`/${failed.jobId}/logs`))).toBe(true);
      expect(api.some((r) => r.url.includes('/api/job-schedulers'))).toBe(true);

      for (const { url, body } of recorded) {
        expect(body.includes(SENTINEL), `response of ${url}`).toBe(false);
      }
      for (const text of [waitingText, failedText, schedulersText]) {
        expect(text).not.toContain(SENTINEL);
      }
    } finally {
      await context.close();
    }
  });
});

describe('board over HTTP', () => {
  it('asks for credentials, and refuses wrong ones', async () => {
    const anonymous = await fetch(readOnlyBoard.url);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic realm="[^"]+"/);
    const api = await fetch(`${readOnlyBoard.url}api/queues`);
    expect(api.status).toBe(401);
    const wrong = await fetch(readOnlyBoard.url, { headers: authHeader(`${PASSWORD}x`) });
    expect(wrong.status).toBe(401);
    const right = await fetch(readOnlyBoard.url, { headers: authHeader() });
    expect(right.status).toBe(200);
  });

  it('refuses a retry in read-only mode that a writable board performs', async () => {
    const queue = hostQueue('h2');
    // bull-board 9.10's retry route: PUT /api/queues/<queue>/<job id>/retry.
    const retryPath = `api/queues/${hostQueueName('h2')}/${failed.jobId}/retry`;
    expect(await queue.getJobState(failed.jobId)).toBe('failed');

    const refused = await fetch(readOnlyBoard.url + retryPath, {
      method: 'PUT',
      headers: authHeader(),
    });
    expect(refused.status).toBe(405);
    expect(await queue.getJobState(failed.jobId)).toBe('failed');

    const accepted = await fetch(writableBoard.url + retryPath, {
      method: 'PUT',
      headers: authHeader(),
    });
    expect(accepted.status).toBe(204);
    expect(await queue.getJobState(failed.jobId)).toBe('waiting');
  });

  it('refuses "pause all" with 405 in read-only mode (bull-board alone says 200)', async () => {
    const queue = hostQueue('h1');
    const response = await fetch(`${readOnlyBoard.url}api/queues/pause`, {
      method: 'PUT',
      headers: authHeader(),
    });
    expect(response.status).toBe(405);
    expect(await queue.isPaused()).toBe(false);
  });

  it('refuses add and edit-data even when writable: they would write [redacted]', async () => {
    const queue = hostQueue('h1');
    const before = await queue.getJobCounts('waiting');
    const headers = { ...authHeader(), 'content-type': 'application/json' };
    const add = await fetch(`${writableBoard.url}api/queues/${hostQueueName('h1')}/add`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'create', data: { userData: REDACTED } }),
    });
    expect(add.status).toBe(403);
    const edit = await fetch(
      `${writableBoard.url}api/queues/${hostQueueName('h1')}/${waiting.jobId}/update-data`,
      { method: 'PATCH', headers, body: JSON.stringify({ jobData: { userData: REDACTED } }) },
    );
    expect(edit.status).toBe(403);
    expect(await queue.getJobCounts('waiting')).toEqual(before);
    const job = await queue.getJob(waiting.jobId);
    expect((job?.data as { userData?: string } | undefined)?.userData).toBe(USER_DATA);
  });
});
