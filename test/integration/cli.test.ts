// The kvm2 CLI as an operator runs it: a child process (`node --import tsx cli/main.ts`)
// with a configuration file, against the real Redis (a fresh key prefix) and the real libvirtd
// through the harness's sshd. What is asserted is what a person or a script sees: exit status,
// standard output, standard error, and what landed in Redis. A child spends a second or more
// loading, so independent runs go at once, and variants of a run already made as a child (the
// JSON form, another host, a usage mistake) go through the same entry, runCli, in-process.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostQueueName } from '../../queues/names.js';
import { appendResult, type JobResult } from '../../queues/results.js';
import { COMMANDS } from '../../cli/commands/index.js';
import type { CliIo } from '../../cli/terminal/io.js';
import { runCli } from '../../cli/run.js';
import { isolatedNetwork, type TestNetwork } from '../harness/libvirt-objects.js';
import { built } from '../harness/build.js';
import { redisScope, type RedisScope } from '../harness/redis.js';
import { freePort, startSshd, type Sshd } from '../harness/sshd.js';
import { testHost } from '../harness/test-host.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SENTINEL = 'kvm2-cli-secret-sentinel-5e1d';
const CHILD_TIMEOUT_MS = 45_000;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

let scope: RedisScope;
let sshd: Sshd;
let net: TestNetwork;
let dir: string;
/** h1 only: the harness's libvirtd through sshd. */
let goodConfig: string;
/** h1, and h2 on a port nobody listens on. */
let mixedConfig: string;
let userDataFile: string;
const queues: Queue[] = [];

/** Runs `kvm2 …` to its end; never rejects for a non-zero exit. */
function kvm2(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['KVM2_CONFIG', 'KVM2_DEBUG', 'LOG_LEVEL']) delete childEnv[name];
  Object.assign(childEnv, env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [built('cli/main.ts'), ...args], {
      cwd: ROOT,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: CHILD_TIMEOUT_MS,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The same entry as the binary, in this process, for runs that touch nothing outside. */
async function inProcess(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    out: (...lines) => (stdout += lines.map((l) => `${l}\n`).join('')),
    err: (...lines) => (stderr += lines.map((l) => `${l}\n`).join('')),
    errRaw: (text) => (stderr += text),
    stderrIsTTY: false,
    stderrColumns: 80,
    env,
  };
  const code = await runCli(args, io);
  return { code, stdout, stderr };
}

function hostQueue(host: string): Queue {
  const queue = new Queue(hostQueueName(host), { connection: scope.redis, prefix: scope.prefix });
  queues.push(queue);
  return queue;
}

/** `kvm2 create` on host h1 with the test config, then `more` options. */
function createArgs(name: string, image: string, ...more: string[]): string[] {
  return [
    'create',
    '--config',
    goodConfig,
    '--host',
    'h1',
    '--name',
    name,
    '--image',
    image,
    ...more,
  ];
}

async function writeJson(name: string, value: unknown): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, JSON.stringify(value));
  return file;
}

/** The id of the create job queued for an instance name, once the CLI has enqueued it. */
async function createJobId(name: string): Promise<string> {
  const queue = hostQueue('h1');
  for (let i = 0; i < 200; i++) {
    const jobs = await queue.getJobs(['waiting', 'delayed', 'prioritized']);
    const job = jobs.find((j) => (j.data as { name?: string }).name === name);
    if (job?.id !== undefined) return job.id;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no create job for ${name}`);
}

function result(jobId: string, fields: Partial<JobResult>): JobResult {
  return {
    jobId,
    op: 'create',
    outcome: 'succeeded',
    attempt: 1,
    timestamp: Date.now(),
    ...fields,
  };
}

beforeAll(async () => {
  [scope, sshd, net] = await Promise.all([
    redisScope('cli'),
    startSshd(),
    isolatedNetwork('kvm2-clinet'),
  ]);
  dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-cli-'));
  const common = {
    redis: { url: scope.url, prefix: scope.prefix },
    images: { tiny: { url: 'http://127.0.0.1:9/tiny.qcow2' } },
    health: { every: '60s', timeout: '10s' },
  };
  const h1 = testHost(sshd, net.name);
  // The same URI, key and known_hosts, on a port nobody listens on.
  const closedPort = await freePort();
  const h2 = {
    ...h1,
    name: 'h2',
    uri: sshd.uri('/system').replace(`:${sshd.port}/`, `:${closedPort}/`),
  };
  goodConfig = await writeJson('good.json', { ...common, hosts: [h1] });
  mixedConfig = await writeJson('mixed.json', { ...common, hosts: [h1, h2] });
  userDataFile = path.join(dir, 'user-data');
  await writeFile(userDataFile, `#cloud-config\n# ${SENTINEL}\n`);
}, 60_000);

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  await scope?.cleanup();
  await net?.remove();
  await sshd?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('help and usage', () => {
  it('answers --help for every command with its usage and every option, status 0', async () => {
    // The binary once, for its wiring; the rest in-process through the same entry (runCli):
    // help touches nothing outside, and a child costs a second or more to start.
    const binary = await kvm2(['--help']);
    expect(binary).toMatchObject({ code: 0, stderr: '' });
    for (const c of COMMANDS) expect(binary.stdout).toContain(`  ${c.name}`);
    for (const c of COMMANDS) {
      const run = await inProcess([...c.name.split(' '), '--help']);
      expect(run.code, c.name).toBe(0);
      expect(run.stdout).toContain(`usage: kvm2 ${c.name}`);
      for (const option of Object.keys(c.options)) expect(run.stdout).toContain(`--${option}`);
      expect(run.stdout).toContain('-h, --help');
    }
  }, 60_000);

  it('refuses bad command lines with status 2, naming the problem', async () => {
    const binary = await kvm2(['list', '--tag', 't', '--colour']);
    expect(binary).toMatchObject({ code: 2, stdout: '' });
    expect(binary.stderr).toBe(
      "kvm2: unknown option '--colour' for 'kvm2 list'\n" +
        'usage: kvm2 list --tag T [--json]\n' +
        "Run 'kvm2 list --help' for details.\n",
    );
    const cases: [string[], string][] = [
      [['frobnicate'], "unknown command 'frobnicate'"],
      [['creat'], "unknown command 'creat' (did you mean 'create'?)"],
      [['config', 'chek'], "unknown subcommand 'chek' for 'kvm2 config'"],
      [['create', '--host', 'h1', '--image', 'tiny'], 'missing required option --name'],
      [
        ['create', '--host', 'h1', '--zone', 'z', '--name', 'n', '--image', 'tiny'],
        'name exactly one of --host and --zone',
      ],
      [['create', '--name'], 'option --name needs a value'],
      [['create', '--name', '--host', 'h1'], 'option --name needs a value'],
      [
        ['create', '--zone', 'z', '--name', 'n', '--image', 'i', '--vcpus', '1.5'],
        'option --vcpus must be a whole number',
      ],
      [['list', '--tag', 'a', '--tag', 'b'], 'option --tag is given more than once'],
      [['list', '--json=yes', '--tag', 'a'], 'option --json takes no value'],
      [['get'], 'missing argument ID'],
      [['get', 'h1/a', 'h1/b'], "unexpected argument 'h1/b'"],
      [['delete', 'no-slash'], 'ID: instance id "no-slash" is not <host>/<name>'],
      [
        ['gc', '--config', goodConfig, '--tag', 't', '--grace', '5x'],
        "option --grace must be a duration like 30s, 10m, 2h or 1d, got '5x'",
      ],
      [['gc', '--tag', 't', '--keep', 'not-an-id'], '--keep: instance id "not-an-id"'],
      [['results', '--count', 'many'], 'option --count must be a whole number'],
      [['results', '--from', 'yesterday'], 'option --from must be a stream id'],
    ];
    for (const [args, message] of cases) {
      const run = await inProcess(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr.split('\n')[0]).toContain(`kvm2: ${message}`);
      expect(run.stderr).toMatch(/\nRun 'kvm2 [a-z ]*--help' for details\.\n$/);
    }
  });
});

describe('config check', () => {
  it('summarises a valid file without the Redis password, and names every bad path', async () => {
    const withPassword = await writeJson('password.json', {
      redis: { url: 'redis://kvm2:hunter2-sentinel@redis.internal:6380/2' },
      hosts: [{ name: 'hv1', uri: 'qemu:///system', network: 'default', zone: 'rack-a' }],
    });
    const bad = await writeJson('bad.json', {
      hosts: [{ name: 'hv1', uri: 'qemu+tls://hv1/system', network: 'default' }],
      images: { x: { url: 'ftp://example/x' } },
    });
    const [ok, okJson, invalid] = await Promise.all([
      kvm2(['config', 'check', '--config', withPassword]),
      inProcess(['config', 'check', '--json'], { KVM2_CONFIG: withPassword }),
      kvm2(['config', 'check', '--config', bad]),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('redis://kvm2@redis.internal:6380/2');
    expect(ok.stdout).toMatch(/^hv1\s+rack-a\s+default\s+default/m);
    expect(okJson.code).toBe(0);
    expect(JSON.parse(okJson.stdout)).toMatchObject({
      valid: true,
      file: withPassword,
      hosts: [{ name: 'hv1', zone: 'rack-a' }],
    });
    for (const run of [ok, okJson]) expect(run.stdout + run.stderr).not.toContain('hunter2');
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    expect(invalid.stderr).toContain(`kvm2: invalid configuration in ${bad}`);
    expect(invalid.stderr).toContain('kvm2.hosts[0].uri: ');
    expect(invalid.stderr).toContain('kvm2.images.x.url: ');
  }, 60_000);
});

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

describe('against the real libvirtd', () => {
  it('check: a healthy host is status 0; an unreachable one makes it 1', async () => {
    const [healthy, mixed, mixedJson, unknown] = await Promise.all([
      kvm2(['check', '--config', goodConfig]),
      kvm2(['check', '--config', mixedConfig]),
      inProcess(['check', '--config', mixedConfig, '--host', 'h2', '--json']),
      inProcess(['check', '--config', goodConfig, '--host', 'h9']),
    ]);
    expect(healthy.stderr).toBe('');
    expect(healthy.code).toBe(0);
    const [header, row] = healthy.stdout.trim().split('\n');
    expect(header).toMatch(
      /^HOST\s+ZONE\s+STATUS\s+REASON\s+LIBVIRT\s+POOL FREE\s+DOMAINS\s+MS\s+MESSAGE$/,
    );
    expect(row).toMatch(/^h1\s+-\s+healthy\s+ok\s+\d+\.\d+\.\d+\s+[\d.]+ \w?i?B\s+\d+\s+\d+\s+\S/);
    expect(mixed.code).toBe(1);
    expect(mixed.stdout).toMatch(/^h1\s+-\s+healthy\s+ok\s/m);
    expect(mixed.stdout).toMatch(/^h2\s+-\s+unhealthy\s+unreachable\s/m);
    expect(mixedJson.code).toBe(1);
    expect(JSON.parse(mixedJson.stdout)).toMatchObject([
      { host: 'h2', status: 'unhealthy', reason: 'unreachable' },
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("--host: host 'h9' is not in the configuration (hosts: h1)");
  }, 60_000);

  it('get of a missing instance is status 1 naming it; list of an unused tag is empty', async () => {
    const [missing, list, listJson] = await Promise.all([
      kvm2(['get', 'h1/kvm2-cli-no-such-vm', '--config', goodConfig]),
      kvm2(['list', '--config', goodConfig, '--tag', 'kvm2-cli-unused-tag']),
      inProcess(['list', '--config', goodConfig, '--tag', 'kvm2-cli-unused-tag', '--json']),
    ]);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toBe("kvm2: no instance 'h1/kvm2-cli-no-such-vm' (ERR_NOT_FOUND)\n");
    expect(list).toMatchObject({ code: 0, stderr: '' });
    expect(list.stdout).toMatch(/^ID\s+STATE\s+ADDRESS\s+CREATED\s+IMAGE\n$/);
    expect(listJson).toMatchObject({ code: 0, stdout: '[]\n' });
  }, 60_000);
});
