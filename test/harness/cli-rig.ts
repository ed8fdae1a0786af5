// What the CLI tests run: `kvm2 …` as a child process from the test build (exit status,
// standard output, standard error), the same entry (runCli) in this process for runs that touch
// nothing outside, and a rig of configuration files over a fresh Redis key prefix and the real
// libvirtd through the harness's sshd, with the host queues the tests read jobs from.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { hostQueueName } from '../../queues/names.js';
import type { JobResult } from '../../queues/results.js';
import type { CliIo } from '../../cli/terminal/io.js';
import { runCli } from '../../cli/run.js';
import { built } from './build.js';
import { isolatedNetwork, type TestNetwork } from './libvirt-objects.js';
import { redisScope, type RedisScope } from './redis.js';
import { freePort, startSshd, type Sshd } from './sshd.js';
import { testHost } from './test-host.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Written into the rig's user-data file: no output may ever show it. */
export const SENTINEL = 'kvm2-cli-secret-sentinel-5e1d';
const CHILD_TIMEOUT_MS = 45_000;

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `kvm2 …` to its end; never rejects for a non-zero exit. */
export function kvm2(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
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
export async function inProcess(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Run> {
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

export function result(jobId: string, fields: Partial<JobResult>): JobResult {
  return {
    jobId,
    op: 'create',
    outcome: 'succeeded',
    attempt: 1,
    timestamp: Date.now(),
    ...fields,
  };
}

export interface CliSetup {
  readonly scope: RedisScope;
  /** h1 only: the harness's libvirtd through sshd. */
  readonly goodConfig: string;
  /** h1, and h2 on a port nobody listens on. */
  readonly mixedConfig: string;
  /** Cloud-config carrying SENTINEL. */
  readonly userDataFile: string;
}

export interface CliRig {
  /** Closed by stop(); a test that opens a queue of its own adds it here. */
  readonly queues: Queue[];
  hostQueue: (host: string) => Queue;
  /** `kvm2 create` on host h1 with the good config, then `more` options. */
  createArgs: (name: string, image: string, ...more: string[]) => string[];
  /** Writes `value` as JSON to a file of the rig's directory; returns its path. */
  writeJson: (name: string, value: unknown) => Promise<string>;
  /** The id of the create job queued for an instance name, once the CLI has enqueued it. */
  createJobId: (name: string) => Promise<string>;
  start: () => Promise<CliSetup>;
  stop: () => Promise<void>;
}

/** `kvm2 create` of `name` from `image` on host h1, with the configuration file `config`. */
export function createArgs(
  config: string,
  name: string,
  image: string,
  ...more: string[]
): string[] {
  return ['create', '--config', config, '--host', 'h1', '--name', name, '--image', image, ...more];
}

export function cliRig(): CliRig {
  let scope: RedisScope | undefined;
  let sshd: Sshd | undefined;
  let net: TestNetwork | undefined;
  let dir: string | undefined;
  let goodConfig = '';
  const queues: Queue[] = [];

  const started = (): { scope: RedisScope; dir: string } => {
    if (scope === undefined || dir === undefined) throw new Error('cliRig: start() first');
    return { scope, dir };
  };

  function hostQueue(host: string): Queue {
    const { scope } = started();
    const queue = new Queue(hostQueueName(host), { connection: scope.redis, prefix: scope.prefix });
    queues.push(queue);
    return queue;
  }

  async function writeJson(name: string, value: unknown): Promise<string> {
    const file = path.join(started().dir, name);
    await writeFile(file, JSON.stringify(value));
    return file;
  }

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

  return {
    queues,
    hostQueue,
    createArgs: (name, image, ...more) => createArgs(goodConfig, name, image, ...more),
    writeJson,
    createJobId,
    async start() {
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
      const mixedConfig = await writeJson('mixed.json', { ...common, hosts: [h1, h2] });
      const userDataFile = path.join(dir, 'user-data');
      await writeFile(userDataFile, `#cloud-config\n# ${SENTINEL}\n`);
      return { scope, goodConfig, mixedConfig, userDataFile };
    },
    async stop() {
      await Promise.all(queues.map((q) => q.close()));
      await scope?.cleanup();
      await net?.remove();
      await sshd?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    },
  };
}
