// A standalone redis-server of a test file's own (issue #15), with its append-only file on and
// fsynced on every write (`appendfsync always`), so a SIGKILL loses nothing acknowledged: kill()
// ends it the hard way, restart() starts it again on the same port and directory, where it
// replays the AOF. stop() ends it and removes the directory.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, LOOPBACK } from './loopback.js';
import { askRedis, redisServerArgs } from './redis.js';

export interface AofRedis {
  readonly url: string;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory; resolves once it answers PING. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function answers(port: number): Promise<boolean> {
  return askRedis(port, async (r) => (await r.ping()) === 'PONG').catch(() => false);
}

export async function startAofRedis(): Promise<AofRedis> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvm2-redis-aof-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn('redis-server', redisServerArgs(port, dir, { appendonly: 'always' }), {
      stdio: 'ignore',
    });
    const deadline = Date.now() + 20_000;
    while (!(await answers(port))) {
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const kill = async (): Promise<void> => {
    const c = child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGKILL');
    await gone;
  };
  await start();
  return {
    url: `redis://${LOOPBACK}:${port}`,
    kill,
    restart: start,
    async stop() {
      await kill();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
