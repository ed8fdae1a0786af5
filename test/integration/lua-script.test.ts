// queues/script.ts against the real Redis: EVALSHA, and EVAL once after the script cache is
// emptied (a restart or SCRIPT FLUSH), then EVALSHA again; and every script file of
// queues/lua/ loaded as the code loads it and compiled by Redis.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

it('hands Redis every key and argument as sent: ASCII, not ASCII, binary, empty', async () => {
  // The request is encoded in one pass when it can be, by ioredis when not (queues/resp.ts):
  // Redis reads back both kinds, byte for byte, with the keys counted where they end.
  const script = new LuaScript(
    `local out = {} for i, k in ipairs(KEYS) do out[#out + 1] = k end
     out[#out + 1] = '|'
     for i, a in ipairs(ARGV) do out[#out + 1] = a end
     return out -- ${Math.random()}`,
  );
  const keys = [`${scope.prefix}:a`, `${scope.prefix}:b`];
  const binary = Buffer.from([0xde, 0x00, 0x0d, 0x0a, 0xc0]);
  const ascii = ['x', '', 'line\r\nbreak', 30000];
  expect(await script.run(scope.redis, keys, ascii)).toEqual([
    ...keys,
    '|',
    'x',
    '',
    'line\r\nbreak',
    '30000',
  ]);
  const mixed = ['é à 雪 😀', '', 'tail'];
  expect(await script.run(scope.redis, keys, mixed)).toEqual([...keys, '|', ...mixed]);
  // A binary argument (BullMQ's packed options in a completion) arrives as its bytes, beside
  // a non-ASCII string (ioredis encodes the request) and beside ASCII only (resp.ts does).
  const bytes = new LuaScript(
    `local t = {} for i = 1, #ARGV[2] do t[#t + 1] = string.byte(ARGV[2], i) end
     return ARGV[1] .. '|' .. table.concat(t, ',') .. '|' .. ARGV[3] -- ${Math.random()}`,
  );
  expect(await bytes.run(scope.redis, keys, ['before', binary, 'après'])).toBe(
    'before|222,0,13,10,192|après',
  );
  expect(await bytes.run(scope.redis, keys, ['before', binary, 'after'])).toBe(
    'before|222,0,13,10,192|after',
  );
});

it("a script's own error is not mistaken for a missing script", async () => {
  const script = new LuaScript(`return redis.error_reply('ERR kvm2 test ${Math.random()}')`);
  await expect(script.run(scope.redis, [], [])).rejects.toThrow(/ERR kvm2 test/);
});

describe('the scripts in queues/lua/', () => {
  const dir = fileURLToPath(new URL('../../queues/lua/', import.meta.url));
  const names = readdirSync(dir)
    .filter((f) => f.endsWith('.lua'))
    .map((f) => f.slice(0, -'.lua'.length));

  it('are there, with the parts they share', () => {
    expect(names.length).toBeGreaterThanOrEqual(7);
    expect(readdirSync(path.join(dir, 'includes')).length).toBeGreaterThanOrEqual(3);
  });

  for (const name of names) {
    it(`${name}.lua loads with its includes in place, once each, and Redis compiles it`, async () => {
      const script = LuaScript.load(name);
      expect(script.lua).not.toMatch(/@include/);
      const defined = [...script.lua.matchAll(/^\s*local function (\w+)/gm)].map((m) => m[1]);
      expect(new Set(defined).size).toBe(defined.length);
      // SCRIPT LOAD compiles without running: a syntax error or an undefined include fails here.
      expect(await scope.redis.script('LOAD', script.lua)).toBe(script.sha);
    });
  }

  it('shares one lock release between the lock script and the end of a job', () => {
    const release = /local function releaseLock\(/;
    expect(LuaScript.load('release-lock').lua).toMatch(release);
    expect(LuaScript.load('append-result-releasing').lua).toMatch(release);
  });

  it('names the file when a script or an include is missing', () => {
    expect(() => LuaScript.load('no-such-script')).toThrow(/no-such-script\.lua cannot be read/);
  });
});
