// The kvm2 CLI's create, delete, gc, results, events and board against the real Redis (a fresh
// key prefix): what a person or a script sees (exit status, standard output, standard error)
// and what landed in Redis. Children from the test build, independent ones at once; variants
// in-process.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishInstanceChange } from '../../queues/events.js';
import { appendResult } from '../../queues/results.js';
import { built, ROOT } from '../harness/build.js';
import { cliRig, inProcess, kvm2, result, SENTINEL } from '../harness/cli-rig.js';
import { waitUntil } from '../harness/fault-kit.js';
import type { RedisScope } from '../harness/redis.js';

const rig = cliRig();
const { createArgs, createJobId, hostQueue, queues } = rig;
let scope: RedisScope;
let goodConfig: string;
let userDataFile: string;

beforeAll(async () => {
  ({ scope, goodConfig, userDataFile } = await rig.start());
}, 60_000);

afterAll(() => rig.stop());

describe('create, delete, gc enqueue jobs', () => {
  it('enqueues a create on host.h1 and never prints the user-data', async () => {
    const run = await kvm2(
      createArgs(
        'cli-web-1',
        'tiny',
        '--tag',
        'cli',
        '--user-data',
        userDataFile,
        '--vcpus',
        '2',
        '--json',
      ),
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const printed = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(printed).toMatchObject({ id: 'h1/cli-web-1', generation: 1 });
    expect(Object.keys(printed).sort()).toEqual(['generation', 'id', 'jobId', 'uid']);
    expect(run.stdout + run.stderr).not.toContain(SENTINEL);
    const job = await hostQueue('h1').getJob(String(printed['jobId']));
    expect(job?.name).toBe('create');
    expect(job?.data).toMatchObject({
      host: 'h1',
      name: 'cli-web-1',
      image: 'tiny',
      tag: 'cli',
      vcpus: 2,
      uid: printed['uid'],
      userData: `#cloud-config\n# ${SENTINEL}\n`,
    });
  }, 60_000);

  it('refuses an unreadable --user-data naming the option and path, enqueuing nothing', async () => {
    const keysBefore = await scope.keys();
    const [missingFile, unknownImage] = await Promise.all([
      kvm2(createArgs('cli-missing', 'tiny', '--user-data', '/nonexistent/user-data')),
      inProcess(createArgs('cli-missing', 'nope')),
    ]);
    expect(missingFile).toMatchObject({ code: 1, stdout: '' });
    expect(missingFile.stderr).toBe(
      'kvm2: --user-data: cannot read /nonexistent/user-data (ENOENT)\n',
    );
    expect(unknownImage.code).toBe(1);
    expect(unknownImage.stderr).toContain("--image: image 'nope' is not in the configuration");
    expect((await scope.keys()).sort()).toEqual(keysBefore.sort());
  }, 60_000);

  it('with --wait --json prints only the final result; the outcome sets the status', async () => {
    const create = (name: string) =>
      kvm2(createArgs(name, 'tiny', '--user-data', userDataFile, '--wait', '--json'));
    const good = create('cli-wait-ok');
    const bad = create('cli-wait-bad');
    const [okJob, badJob] = await Promise.all([
      createJobId('cli-wait-ok'),
      createJobId('cli-wait-bad'),
    ]);
    await appendResult(
      scope.redis,
      scope.prefix,
      result(okJob, { instanceId: 'h1/cli-wait-ok', state: 'running', address: '10.9.8.7' }),
    );
    await appendResult(
      scope.redis,
      scope.prefix,
      result(badJob, {
        instanceId: 'h1/cli-wait-bad',
        outcome: 'failed',
        errorKind: 'quota_exceeded',
        errorCode: 'ERR_POOL_FULL',
        message: 'pool default on h1 has 1 GiB free, 2 GiB needed',
      }),
    );
    const [ok, failed] = await Promise.all([good, bad]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({
      jobId: okJob,
      outcome: 'succeeded',
      state: 'running',
      address: '10.9.8.7',
    });
    expect(ok.stdout.trim().split('\n')).toHaveLength(1);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ jobId: badJob, outcome: 'failed' });
    expect(failed.stderr).toContain(
      'kvm2: create h1/cli-wait-bad failed: quota_exceeded (ERR_POOL_FULL): pool default on h1',
    );
    for (const run of [ok, failed]) expect(run.stdout + run.stderr).not.toContain(SENTINEL);
  }, 60_000);

  it('enqueues a delete and a gc round', async () => {
    const [deleted, gc] = await Promise.all([
      kvm2(['delete', 'h1/cli-web-1', '--config', goodConfig, '--json']),
      kvm2(['gc', '--config', goodConfig, '--tag', 'cli', '--keep', 'h1/a,h1/b', '--grace', '2h']),
    ]);
    expect(deleted.code).toBe(0);
    const { jobId } = JSON.parse(deleted.stdout) as { jobId: string };
    expect((await hostQueue('h1').getJob(jobId))?.data).toMatchObject({ id: 'h1/cli-web-1' });
    expect(gc.code).toBe(0);
    const gcJobId = /^job:\s+(\S+)$/m.exec(gc.stdout)?.[1] ?? '';
    const gcQueue = new Queue('gc', { connection: scope.redis, prefix: scope.prefix });
    queues.push(gcQueue);
    expect((await gcQueue.getJob(gcJobId))?.data).toMatchObject({
      tag: 'cli',
      keep: ['h1/a', 'h1/b'],
      graceMs: 2 * 3_600_000,
    });
  }, 60_000);
});

describe('results', () => {
  it('prints the newest entries, as lines or JSON', async () => {
    const jobId = 'cli-results-job-1';
    await appendResult(
      scope.redis,
      scope.prefix,
      result(jobId, {
        op: 'delete',
        instanceId: 'h1/cli-r',
        outcome: 'failed',
        errorKind: 'transient',
        message: 'link to h1 lost',
      }),
    );
    const [json, text] = await Promise.all([
      kvm2(['results', '--config', goodConfig, '--json', '--count', '5']),
      inProcess(['results', '--config', goodConfig, '--count', '1']),
    ]);
    expect(json.code).toBe(0);
    const entries = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.length).toBeLessThanOrEqual(5);
    expect(entries.at(-1)).toMatchObject({
      jobId,
      op: 'delete',
      instanceId: 'h1/cli-r',
      outcome: 'failed',
      errorKind: 'transient',
      message: 'link to h1 lost',
    });
    expect(text.code).toBe(0);
    const [header, line, extra] = text.stdout.trim().split('\n');
    expect(header).toMatch(
      /^TIME\s+JOB\s+OP\s+INSTANCE\s+OUTCOME\s+KIND\s+STATE\s+ADDRESS\s+MESSAGE$/,
    );
    expect(line).toMatch(
      new RegExp(
        `^\\S+Z\\s+${jobId}\\s+delete\\s+h1/cli-r\\s+failed\\s+transient\\s+-\\s+-\\s+link to h1 lost$`,
      ),
    );
    expect(extra).toBeUndefined();
  }, 60_000);
});

describe('events', () => {
  const lease = { redisKey: '', token: 'cli-events-lease' };
  const publish = (name: string, state: 'running' | 'stopped', event: string) =>
    publishInstanceChange(scope.redis, scope.prefix, lease, {
      host: 'h1',
      name,
      cause: { event, detail: event === 'stopped' ? 'destroyed' : 'booted' },
      observation: {
        host: 'h1',
        name,
        instanceId: `h1/${name}`,
        uid: `uid-${name}`,
        state,
        ...(state === 'running' ? { address: '192.0.2.40' } : {}),
        fresh: false,
        startingUp: false,
      },
    });

  beforeAll(async () => {
    lease.redisKey = `${scope.prefix}:lock:watch:h1`;
    await scope.redis.set(lease.redisKey, lease.token, 'PX', 300_000);
  });

  it('prints the newest events only (results between them skipped), one instance with --instance', async () => {
    await publish('cli-ev-a', 'running', 'started');
    await appendResult(scope.redis, scope.prefix, result('cli-events-job', { op: 'create' }));
    await publish('cli-ev-b', 'running', 'started');
    await publish('cli-ev-a', 'stopped', 'stopped');
    const [text, json, one, bad] = await Promise.all([
      inProcess(['events', '--config', goodConfig, '--count', '2']),
      kvm2(['events', '--config', goodConfig, '--json', '--count', '3']),
      inProcess(['events', '--config', goodConfig, '--instance', 'h1/cli-ev-a']),
      inProcess(['events', '--config', goodConfig, '--instance', 'no-slash']),
    ]);
    expect(text.code).toBe(0);
    const [header, ...lines] = text.stdout.trim().split('\n');
    expect(header).toMatch(/^TIME\s+INSTANCE\s+STATE\s+PREVIOUS\s+EVENT\s+ADDRESS\s+UID$/);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^\S+Z\s+h1\/cli-ev-b\s+running\s+-\s+started\/booted\s+192\.0\.2\.40\s+uid-cli-ev-b$/,
    );
    expect(lines[1]).toMatch(
      /^\S+Z\s+h1\/cli-ev-a\s+stopped\s+running\s+stopped\/destroyed\s+-\s+uid-cli-ev-a$/,
    );

    expect(json.code).toBe(0);
    const entries = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.map((e) => [e['instanceId'], e['state']])).toEqual([
      ['h1/cli-ev-a', 'running'],
      ['h1/cli-ev-b', 'running'],
      ['h1/cli-ev-a', 'stopped'],
    ]);
    expect(entries.every((e) => e['type'] === 'event')).toBe(true);

    expect(one.code).toBe(0);
    expect(one.stdout.trim().split('\n').slice(1)).toHaveLength(2);
    expect(one.stdout).not.toContain('cli-ev-b');

    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^kvm2: option --instance: /);
  }, 60_000);

  it('--follow prints events as they are published, and Ctrl-C ends it with status 0', async () => {
    const child = spawn(
      process.execPath,
      [built('cli/main.ts'), 'events', '--config', goodConfig, '--follow', '--count', '1'],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await waitUntil(() => out.includes('TIME'), 20_000, 'the header');
      await publish('cli-ev-follow', 'running', 'started');
      await waitUntil(() => out.includes('h1/cli-ev-follow'), 20_000, 'the followed event');
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});

describe('board', () => {
  it('prints its URL as the first line of standard output, before any log line', async () => {
    const config = JSON.parse(await readFile(goodConfig, 'utf8')) as Record<string, unknown>;
    const file = await rig.writeJson('board.json', {
      ...config,
      board: { listen: '127.0.0.1:0' },
    });
    const child = spawn(process.execPath, [built('cli/main.ts'), 'board', '--config', file], {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      // The log line says "listening": the URL must be out by then.
      await waitUntil(() => out.includes('board: listening'), 20_000, 'the listening log line');
      const [first = '', ...rest] = out.split('\n');
      expect(first).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      expect(rest.some((line) => line.includes('"msg":"board: listening"'))).toBe(true);
      expect((await fetch(first)).status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});
