// The kvm2 CLI when Redis goes away or refuses it: a wait that gives up at --timeout (status
// 124), a wait that says Redis is unreachable instead of hanging in silence, `events --follow`
// ending with ERR_REDIS_UNAVAILABLE, and a refused password named as such, never printed.
// Children from the test build, against a redis-server of this file's own (killed on purpose)
// and the run's Redis (an ACL user made for one test).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { built, ROOT } from '../harness/build.js';
import { inProcess, kvm2 } from '../harness/cli-rig.js';
import { waitUntil } from '../harness/fault-kit.js';
import { startAofRedis, type AofRedis } from '../harness/redis-aof.js';
import { askRedis, redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
let own: AofRedis;
let dir: string;

beforeAll(async () => {
  [scope, own] = await Promise.all([redisScope('cli-faults'), startAofRedis()]);
  dir = await mkdtemp(path.join(os.tmpdir(), 'kvm2-cli-faults-'));
}, 60_000);

afterAll(async () => {
  await Promise.all([scope.cleanup(), own.stop()]);
  await rm(dir, { recursive: true, force: true });
});

const ownPort = (): number => Number(new URL(own.url).port);

/** A configuration with one host (never dialed by these commands) and Redis at `url`. */
async function configFor(url: string, name: string): Promise<string> {
  const file = path.join(dir, `${name}.json`);
  await writeFile(
    file,
    JSON.stringify({
      redis: { url, prefix: scope.prefix },
      hosts: [{ name: 'h1', uri: 'test:///default', pool: 'default-pool', network: 'default' }],
      images: { tiny: { url: 'http://127.0.0.1:9/tiny.qcow2' } },
    }),
  );
  return file;
}

interface Child {
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
  kill: (signal: NodeJS.Signals) => void;
  /** Waits for `check`; a child that ended before fails the wait with what it said. */
  until: (check: () => boolean, timeoutMs: number, what: string) => Promise<void>;
}

function start(args: readonly string[]): Child {
  const child = spawn(process.execPath, [built('cli/main.ts'), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let ended = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  void exited.then(() => (ended = true));
  return {
    out: () => out,
    err: () => err,
    exited,
    kill: (signal) => child.kill(signal),
    until: (check, timeoutMs, what) =>
      waitUntil(
        () => {
          if (check()) return true;
          if (ended) throw new Error(`kvm2 ended before ${what}: ${err}`);
          return false;
        },
        timeoutMs,
        what,
      ),
  };
}

describe('--wait --timeout', () => {
  it('gives up after the timeout with status 124; the job carries on', async () => {
    const config = await configFor(scope.url, 'shared');
    const [deleted, created, collected] = await Promise.all([
      kvm2(['delete', 'h1/faults-t1', '--config', config, '--wait', '--timeout', '1s']),
      kvm2([
        'create',
        '--config',
        config,
        '--host',
        'h1',
        '--name',
        'faults-t2',
        '--image',
        'tiny',
        '--wait',
        '--json',
        '--timeout=2s',
      ]),
      kvm2(['gc', '--config', config, '--tag', 'faults', '--wait', '--timeout', '1s']),
    ]);
    const deleteJob = /^job:\s+(\S+)$/m.exec(deleted.stdout)?.[1];
    expect(deleteJob).toBeDefined();
    expect(deleted).toMatchObject({
      code: 124,
      stderr: `kvm2: no final result for job ${deleteJob} within 1s; the job carries on (ERR_WAIT_TIMEOUT)\n`,
    });
    // --wait --json prints only the final result: none here.
    expect(created).toMatchObject({ code: 124, stdout: '' });
    expect(created.stderr).toMatch(
      /^kvm2: no final result for job \S+ within 2s; the job carries on \(ERR_WAIT_TIMEOUT\)\n$/,
    );
    const gcJob = /^job:\s+(\S+)$/m.exec(collected.stdout)?.[1];
    expect(collected).toMatchObject({
      code: 124,
      stderr: `kvm2: no final result for job ${gcJob} within 1s; the job carries on (ERR_WAIT_TIMEOUT)\n`,
    });
  }, 30_000);

  it('refuses a timeout without --wait, or one that is no duration, with status 2', async () => {
    const cases: [string[], string][] = [
      [['delete', 'h1/a', '--timeout', '5s'], 'kvm2: option --timeout needs --wait\n'],
      [
        ['delete', 'h1/a', '--wait', '--timeout', '5x'],
        "kvm2: option --timeout must be a duration like 30s, 10m, 2h or 1d, got '5x'\n",
      ],
      [
        ['create', '--host', 'h1', '--name', 'n', '--image', 'i', '--wait', '--timeout', '0s'],
        "kvm2: option --timeout must be more than 0, got '0s'\n",
      ],
    ];
    for (const [args, first] of cases) {
      const run = await inProcess(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr.split('\n')[0] + '\n', args.join(' ')).toBe(first);
    }
  });
});

describe('Redis gone', () => {
  it('a wait says once that Redis is unreachable, and still ends at --timeout', async () => {
    const config = await configFor(own.url, 'own-wait');
    const child = start([
      'delete',
      'h1/faults-w1',
      '--config',
      config,
      '--wait',
      '--timeout',
      '8s',
    ]);
    try {
      await child.until(() => child.out().includes('job:'), 20_000, 'the enqueued job');
      await own.kill();
      const notice = `kvm2: redis at 127.0.0.1:${ownPort()} unreachable, still waiting…\n`;
      await child.until(() => child.err().includes(notice), 7_000, 'the unreachable notice');
      expect(await child.exited).toBe(124);
      expect(child.err()).toMatch(
        new RegExp(
          `^${notice}kvm2: no final result for job \\S+ within 8s; the job carries on \\(ERR_WAIT_TIMEOUT\\)\\n$`,
        ),
      );
    } finally {
      child.kill('SIGKILL');
      await own.kill();
      await own.restart();
    }
  }, 40_000);

  it('events --follow ends with ERR_REDIS_UNAVAILABLE, status 1', async () => {
    const config = await configFor(own.url, 'own-events');
    const child = start(['events', '--config', config, '--follow']);
    try {
      await child.until(() => child.out().includes('TIME'), 20_000, 'the header');
      await own.kill();
      expect(await child.exited).toBe(1);
      expect(child.err()).toMatch(
        new RegExp(
          `^kvm2: redis at 127\\.0\\.0\\.1:${ownPort()} is unreachable: [^\\n]+ \\(ERR_REDIS_UNAVAILABLE\\)\\n$`,
        ),
      );
    } finally {
      child.kill('SIGKILL');
      await own.kill();
      await own.restart();
    }
  }, 40_000);
});

describe('credentials Redis refuses', () => {
  it('a wrong password is named as refused, and never printed', async () => {
    const user = `kvm2t-cli-${randomUUID().slice(0, 8)}`;
    const right = `right-${randomUUID()}`;
    const wrong = `wrong-${randomUUID()}`;
    await scope.redis.call('ACL', 'SETUSER', user, 'on', `>${right}`, '~*', '&*', '+@all');
    try {
      const url = new URL(scope.url);
      url.username = user;
      url.password = wrong;
      const config = await configFor(url.toString(), 'wrongpass');
      const [results, deleted] = await Promise.all([
        kvm2(['results', '--config', config]),
        kvm2(['delete', 'h1/faults-a1', '--config', config, '--wait']),
      ]);
      const endpoint = `${url.hostname}:${url.port}`;
      for (const run of [results, deleted]) {
        expect(run).toMatchObject({
          code: 1,
          stdout: '',
          stderr: `kvm2: redis at ${endpoint} refused the credentials (WRONGPASS invalid username-password pair or user is disabled.) (ERR_REDIS_UNAVAILABLE)\n`,
        });
        expect(run.stderr).not.toContain(wrong);
        expect(run.stderr).not.toContain(right);
      }
    } finally {
      await scope.redis.call('ACL', 'DELUSER', user);
    }
  }, 30_000);

  it('no password where Redis asks for one is named as such', async () => {
    const password = `pw-${randomUUID()}`;
    await askRedis(ownPort(), (r) => r.config('SET', 'requirepass', password));
    try {
      const config = await configFor(own.url, 'noauth');
      const run = await kvm2(['results', '--config', config]);
      expect(run).toMatchObject({
        code: 1,
        stdout: '',
        stderr: `kvm2: redis at 127.0.0.1:${ownPort()} asks for a password and none is configured (NOAUTH Authentication required.) (ERR_REDIS_UNAVAILABLE)\n`,
      });
    } finally {
      const admin = new Redis(own.url, { password, lazyConnect: true });
      try {
        await admin.connect();
        await admin.config('SET', 'requirepass', '');
      } finally {
        admin.disconnect();
      }
    }
  }, 30_000);
});
