// A Lua script run by its SHA1 (EVALSHA): the script's text crosses the wire only the first
// time after a Redis restart or SCRIPT FLUSH (NOSCRIPT → EVAL, which also caches it again).
// Every kvm2 script runs on a job's hot path, where bytes on a loopback socket cost CPU.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export class LuaScript {
  readonly sha: string;

  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(
    redis: Redis,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }
}
