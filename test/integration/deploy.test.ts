// How kvm2 is run: the compose file is valid for docker-compose (no Docker engine runs here,
// so `config` is as far as it goes), its Redis is configured as SPEC §8 expects, the example
// configuration it mounts validates, and `npm start`'s entry runs a worker and the board on a
// configuration from KVM2_CONFIG and stops on SIGTERM.
import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { loadConfig } from '../../src/provider/config/load.js';
import { built } from '../harness/build.js';
import { startQueueFleet, TEST_WORKER, type QueueFleet } from '../harness/queue-fleet.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('docker-compose.yml', () => {
  it('docker-compose config accepts it', async () => {
    const { stdout } = await run('docker-compose', ['-f', 'docker-compose.yml', 'config'], {
      cwd: ROOT,
    });
    const resolved = YAML.parse(stdout) as { services: Record<string, { command?: string[] }> };
    expect(Object.keys(resolved.services).sort()).toEqual(['board', 'redis', 'worker']);
    const redis = resolved.services['redis']?.command?.join(' ') ?? '';
    expect(redis).toContain('--appendonly yes');
    expect(redis).toContain('--maxmemory-policy noeviction');
  });

  it('each service comes back on its own, and the mounted files are read as their owner', async () => {
    const { stdout } = await run('docker-compose', ['-f', 'docker-compose.yml', 'config'], {
      cwd: ROOT,
      env: { ...process.env, KVM2_UID: '1234', KVM2_GID: '5678' },
    });
    type Service = {
      restart?: string;
      user?: string;
      ports?: unknown[];
      healthcheck?: unknown;
      init?: boolean;
    };
    const { services } = YAML.parse(stdout) as { services: Record<string, Service> };
    for (const name of ['redis', 'worker', 'board']) {
      // After a crash, a reboot or a Docker restart: nothing came back, Redis included.
      expect(services[name]?.restart, name).toBe('unless-stopped');
    }
    // The config (passwords) and the SSH key are mounted as they are on the host, 0600 and
    // owned by the operator: the container must run as that owner to read them.
    expect(services['worker']?.user).toBe('1234:5678');
    expect(services['board']?.user).toBe('1234:5678');
    // An init as PID 1: node there would ignore a SIGTERM before its handler is installed.
    expect(services['worker']?.init).toBe(true);
    expect(services['board']?.init).toBe(true);
    // The services reach Redis as redis:6379; a host port would collide with a Redis there.
    expect(services['redis']?.ports).toBeUndefined();
    expect(services['board']?.healthcheck).toBeDefined();
  });

  it('the example configuration it mounts validates', async () => {
    const config = await loadConfig({ file: `${ROOT}/deploy/config.example.yaml`, env: {} });
    expect(config.redis.url).toBe('redis://redis:6379');
    expect(config.board.auth).toBeDefined();
    expect(config.worker.listen).toEqual({ host: '0.0.0.0', port: 9464 });
  });

  it('the Dockerfile builds what package.json names as the binary', async () => {
    const dockerfile = await readFile(`${ROOT}/Dockerfile`, 'utf8');
    const pkg = JSON.parse(await readFile(`${ROOT}/package.json`, 'utf8')) as {
      bin: { kvm2: string };
    };
    expect(dockerfile).toContain(`"${pkg.bin.kvm2}"`);
  });

  it('the Dockerfile runs on Node.js 24 LTS', async () => {
    const dockerfile = await readFile(`${ROOT}/Dockerfile`, 'utf8');
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(bases).toEqual(['node:24-bookworm-slim', 'node:24-bookworm-slim']);
  });
});

describe('npm start', () => {
  let fleet: QueueFleet;
  beforeAll(async () => {
    fleet = await startQueueFleet('st');
  }, 120_000);
  afterAll(async () => fleet?.cleanup(), 120_000);

  it('runs a worker and the board, and stops on SIGTERM', async () => {
    const config = fleet.writeConfig({ board: { listen: '127.0.0.1:0' } });
    const child = spawn(process.execPath, [built('cli/start.ts')], {
      cwd: ROOT,
      env: { ...process.env, KVM2_CONFIG: config },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: Record<string, unknown>[] = [];
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const seen = (msg: string): Promise<Record<string, unknown>> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no '${msg}' log; ${stderr}`)), 60_000);
        const check = (): void => {
          const line = lines.find((l) => l['msg'] === msg);
          if (line !== undefined) {
            clearTimeout(timer);
            resolve(line);
          } else setTimeout(check, 50);
        };
        check();
      });
    let partial = '';
    child.stdout.on('data', (c: Buffer) => {
      partial += c.toString();
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      for (const p of parts)
        if (p.trim() !== '') lines.push(JSON.parse(p) as Record<string, unknown>);
    });
    try {
      const board = await seen('board listening');
      const worker = await seen('worker ready');
      expect((await fetch(String(board['url']))).status).toBe(200);
      expect((await fetch(`${String(worker['endpoints'])}/readyz`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 120_000);

  it('exits 1 when the worker cannot start, the board closed with it', async () => {
    // The worker's endpoints' port is taken: the board had started, and kept the process up.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    const config = fleet.writeConfig({
      board: { listen: '127.0.0.1:0' },
      worker: { ...TEST_WORKER, listen: `127.0.0.1:${port}` },
    });
    const child = spawn(process.execPath, [built('cli/start.ts')], {
      cwd: ROOT,
      env: { ...process.env, KVM2_CONFIG: config },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    try {
      expect(await exited).toBe(1);
      expect(stdout).toContain('kvm2 could not start');
    } finally {
      clearTimeout(timer);
      taken.close();
    }
  }, 60_000);
});
