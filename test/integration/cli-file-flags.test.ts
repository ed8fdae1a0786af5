// `kvm2 create`'s file options (--user-data, --network-config): an empty value is a usage
// mistake naming the option (status 2), `-` reads standard input (one option at most), and
// what is read travels in the job, never printed. A child from the test build for stdin; the
// usage mistakes in-process.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostQueueName } from '../../queues/names.js';
import { built, ROOT } from '../harness/build.js';
import { createArgs, inProcess, type Run } from '../harness/cli-rig.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
let dir: string;
let config: string;
let queue: Queue;

beforeAll(async () => {
  scope = await redisScope('cli-files');
  dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-cli-files-'));
  config = path.join(dir, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      redis: { url: scope.url, prefix: scope.prefix },
      hosts: [{ name: 'h1', uri: 'test:///default', pool: 'default-pool', network: 'default' }],
      images: { tiny: { url: 'http://127.0.0.1:9/tiny.qcow2' } },
    }),
  );
  queue = new Queue(hostQueueName('h1'), { connection: scope.redis, prefix: scope.prefix });
}, 60_000);

afterAll(async () => {
  await queue.close();
  await scope.cleanup();
  await rm(dir, { recursive: true, force: true });
});

const create = (name: string, ...more: string[]): string[] =>
  createArgs(config, name, 'tiny', ...more);

/** `kvm2 …` with `input` on its standard input. */
function withStdin(args: readonly string[], input: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [built('cli/main.ts'), ...args], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: 30_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe('file options', () => {
  it('refuses an empty value with status 2, naming the option', async () => {
    const cases: [string[], string][] = [
      [['--user-data', ''], 'kvm2: option --user-data needs a file name, got an empty value'],
      [
        ['--network-config='],
        'kvm2: option --network-config needs a file name, got an empty value',
      ],
      [
        ['--user-data', '-', '--network-config', '-'],
        'kvm2: only one option can read standard input: --user-data and --network-config both name -',
      ],
    ];
    for (const [more, message] of cases) {
      const run = await inProcess(create('files-empty', ...more));
      expect(run.code, more.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr.split('\n')[0], more.join(' ')).toBe(message);
      expect(run.stderr).toContain('usage: kvm2 create');
    }
  });

  it('reads --user-data - from standard input into the job, never printing it', async () => {
    const secret = `STDIN-SECRET-${randomUUID()}`;
    const userData = `#cloud-config\n# ${secret}\n`;
    const run = await withStdin(create('files-stdin', '--user-data', '-', '--json'), userData);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).not.toContain(secret);
    const { jobId } = JSON.parse(run.stdout) as { jobId: string };
    expect((await queue.getJob(jobId))?.data).toMatchObject({ name: 'files-stdin', userData });
  }, 30_000);

  it('reads --network-config - from standard input beside a --user-data file', async () => {
    const userDataFile = path.join(dir, 'user-data');
    await writeFile(userDataFile, '#cloud-config\n');
    const networkConfig = 'version: 2\nethernets: {}\n';
    const run = await withStdin(
      create('files-net', '--user-data', userDataFile, '--network-config', '-', '--json'),
      networkConfig,
    );
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const { jobId } = JSON.parse(run.stdout) as { jobId: string };
    expect((await queue.getJob(jobId))?.data).toMatchObject({
      userData: '#cloud-config\n',
      networkConfig,
    });
  }, 30_000);
});
