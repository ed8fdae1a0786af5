// The README's quick start, run as written (issue #19): its commands are read from README.md
// (and must be docs/operations.md's too), not copied here. `npm start` on the embedded default
// (no KVM2_CONFIG) against the machine's own libvirtd and the Redis setup started, then each
// `npx kvm2` line in a shell: the create ends succeeded, running, with the address the guest
// agent reported; delete leaves no domain and no volume.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../harness/build.js';
import { waitUntil } from '../harness/fault-kit.js';
import { poolVolumes } from '../harness/libvirt-objects.js';
import { virsh } from '../harness/virsh.js';

const execFileAsync = promisify(execFile);
/** What the embedded default names: the Redis setup starts, under the default prefix. */
const DEFAULT_REDIS = 'redis://127.0.0.1:6379';
const NAME = 'proxy-1';

interface Ran {
  readonly command: string;
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The shell lines of each ```sh block of the section under `heading`, comments dropped. */
function shellBlocks(markdown: string, heading: RegExp): string[][] {
  const start = markdown.search(heading);
  if (start < 0) throw new Error(`no heading ${heading}`);
  const rest = markdown.slice(start);
  const next = rest.slice(1).search(/^## /m);
  const section = next < 0 ? rest : rest.slice(0, next + 1);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) =>
    (m[1] ?? '')
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
}

/** The environment of a user who has set nothing: the embedded default. */
function userEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['KVM2_CONFIG', 'KVM2_DEBUG', 'LOG_LEVEL', 'REDIS_URL']) delete env[name];
  return env;
}

function runLine(command: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], {
      cwd: ROOT,
      env: userEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 300_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (code) => resolve({ command, code: code ?? -1, stdout, stderr }));
  });
}

async function removeLeftovers(): Promise<void> {
  await virsh(['destroy', NAME]).catch(() => undefined);
  await virsh(['undefine', '--nvram', NAME]).catch(() => undefined);
  for (const vol of await instanceVolumes()) {
    await virsh(['vol-delete', '--pool', 'default', vol]).catch(() => undefined);
  }
}

async function instanceVolumes(): Promise<string[]> {
  return (await poolVolumes()).filter((v) => v.startsWith(`kvm2-${NAME}`));
}

async function defaultKeys(redis: Redis): Promise<Set<string>> {
  const keys = new Set<string>();
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', '{kvm2}*', 'COUNT', 1000);
    for (const k of batch) keys.add(k);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

let readme = '';
let operations = '';
let commands: string[] = [];
let start: ChildProcess | undefined;
let startLog = '';
let redis: Redis;
let keysBefore = new Set<string>();

beforeAll(async () => {
  readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  operations = await readFile(path.join(ROOT, 'docs/operations.md'), 'utf8');
  redis = new Redis(DEFAULT_REDIS, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  keysBefore = await defaultKeys(redis);
  await removeLeftovers();
}, 60_000);

afterAll(async () => {
  if (start?.pid !== undefined && start.exitCode === null) {
    const exited = new Promise((resolve) => start?.once('exit', resolve));
    process.kill(-start.pid, 'SIGTERM');
    const timer = setTimeout(() => {
      if (start?.pid !== undefined) process.kill(-start.pid, 'SIGKILL');
    }, 20_000);
    await exited;
    clearTimeout(timer);
  }
  await removeLeftovers();
  if (redis !== undefined) {
    // What this run added under the default prefix; what was there before stays.
    const added = [...(await defaultKeys(redis))].filter((k) => !keysBefore.has(k));
    for (let i = 0; i < added.length; i += 500) await redis.del(...added.slice(i, i + 500));
    redis.disconnect();
  }
}, 60_000);

describe("the README's quick start", () => {
  it('is one set of commands in the README and in docs/operations.md', () => {
    expect(readme).toMatch(/^npm run setup\s/m);
    const blocks = shellBlocks(readme, /^## Quick start/m);
    expect(blocks[0]).toEqual(['npm start']);
    commands = blocks[1] ?? [];
    expect(commands.length).toBeGreaterThan(0);
    expect(commands.every((c) => c.startsWith('npx kvm2 '))).toBe(true);
    expect(shellBlocks(operations, /^## Quick start/m)).toEqual(blocks);
  });

  it('runs as written on the embedded default: create succeeds running with the agent address, delete leaves nothing', async () => {
    expect(commands.length).toBeGreaterThan(0);
    const networkConfig = await readFile(
      path.join(ROOT, 'examples/quick-start/network-config.yaml'),
      'utf8',
    );
    const address = /-\s*(\d+\.\d+\.\d+\.\d+)\/\d+/.exec(networkConfig)?.[1];
    expect(address).toBeDefined();

    start = spawn('sh', ['-c', 'npm start'], {
      cwd: ROOT,
      env: userEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: npm, sh and node stop together
    });
    start.stdout?.setEncoding('utf8').on('data', (c: string) => (startLog += c));
    start.stderr?.setEncoding('utf8').on('data', (c: string) => (startLog += c));
    await waitUntil(
      async () => {
        if (start?.exitCode !== null) throw new Error(`npm start exited: ${startLog.slice(-2000)}`);
        const ready = await fetch('http://127.0.0.1:9464/readyz').catch(() => undefined);
        return ready?.status === 200;
      },
      180_000,
      'npm start to be ready (/readyz)',
      500,
    );

    const ran: Ran[] = [];
    for (const command of commands) {
      const result = await runLine(command);
      ran.push(result);
      process.stdout.write(`[quick-start] $ ${command} → ${result.code}\n${result.stdout}`);
      expect(result, `${command}\n${result.stderr}`).toMatchObject({ code: 0 });
    }
    const out = (verb: string): string =>
      ran.find((r) => r.command.startsWith(`npx kvm2 ${verb}`))?.stdout ?? '';

    expect(out('check')).toMatch(/^local\s+.*\bhealthy\b/m);
    const created = out('create');
    expect(created).toMatch(/^outcome:\s+succeeded$/m);
    expect(created).toMatch(/^state:\s+running$/m);
    expect(created).toMatch(new RegExp(`^address:\\s+${address?.replace(/\./g, '\\.')}$`, 'm'));
    expect(out('get')).toMatch(/^state:\s+running$/m);
    expect(out('list')).toContain(`local/${NAME}`);
    expect(out('results')).toMatch(new RegExp(`create\\s+local/${NAME}\\s+succeeded`));
    // Its life as the host's watcher published it: booted, then running with its address.
    expect(out('events')).toMatch(
      new RegExp(`local/${NAME}\\s+provisioning\\s+-\\s+started/booted`),
    );
    expect(out('events')).toMatch(
      new RegExp(
        `local/${NAME}\\s+running\\s+provisioning\\s+\\S+\\s+${address?.replace(/\./g, '\\.')}`,
      ),
    );
    expect(out('delete')).toMatch(/^outcome:\s+succeeded$/m);

    // Nothing left: no domain, no disk, no seed.
    const domains = (await virsh(['list', '--all', '--name'])).split('\n').map((s) => s.trim());
    expect(domains).not.toContain(NAME);
    expect(await instanceVolumes()).toEqual([]);
    // The image came from the demo file setup installed.
    const { stdout } = await execFileAsync('virsh', [
      '-c',
      'qemu:///system',
      'net-info',
      'default',
    ]);
    expect(stdout).toMatch(/^Active:\s+yes$/m);
  }, 400_000);
});
