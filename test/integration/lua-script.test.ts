// queues/script.ts against the real Redis: EVALSHA, and EVAL once after the script cache is
// emptied (a restart or SCRIPT FLUSH), then EVALSHA again.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LuaScript } from '../../queues/script.js';
import { redisScope, type RedisScope } from '../harness/redis.js';

let scope: RedisScope;
beforeAll(async () => {
  scope = await redisScope('lua');
});
afterAll(async () => scope?.cleanup());

it('runs by SHA1, and survives an emptied script cache', async () => {
  const script = new LuaScript(
    `return redis.call('INCRBY', KEYS[1], ARGV[1]) .. ':' .. '${Math.random()}'`,
  );
  const key = `${scope.prefix}:n`;
  expect(String(await script.run(scope.redis, [key], [2]))).toMatch(/^2:/);
  expect(await scope.redis.script('EXISTS', script.sha)).toEqual([1]);
  await scope.redis.script('FLUSH');
  expect(String(await script.run(scope.redis, [key], [3]))).toMatch(/^5:/);
  expect(await scope.redis.script('EXISTS', script.sha)).toEqual([1]);
});

it("a script's own error is not mistaken for a missing script", async () => {
  const script = new LuaScript(`return redis.error_reply('ERR kvm2 test ${Math.random()}')`);
  await expect(script.run(scope.redis, [], [])).rejects.toThrow(/ERR kvm2 test/);
});
