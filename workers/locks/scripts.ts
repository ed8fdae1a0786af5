// The Lua scripts that make renewal and release safe: each checks the token first, atomically,
// so a holder never extends or deletes a lock that has passed to someone else
// (https://redis.io/docs/latest/develop/use/patterns/distributed-locks/).
//
// Run by SHA1 (queues/script.ts), with EVAL once after a server restart or SCRIPT FLUSH.
import { LuaScript } from '../../queues/script.js';

/** KEYS[1] lock key, ARGV[1] token, ARGV[2] ttl ms → 1 renewed, 0 key gone, -1 another token. */
export const RENEW_SCRIPT = new LuaScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
elseif v then
  return -1
end
return 0`);

/** KEYS[1] lock key, ARGV[1] token → 1 deleted, 0 not ours (gone or another holder's). */
export const RELEASE_SCRIPT = new LuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`);
