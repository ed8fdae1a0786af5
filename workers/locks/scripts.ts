// The Lua scripts that make renewal and release safe (queues/lua/renew-lock.lua,
// release-lock.lua): each checks the token first, atomically, so a holder never extends or
// deletes a lock that has passed to someone else
// (https://redis.io/docs/latest/develop/use/patterns/distributed-locks/). The release is the
// same include the end of a job runs (append-result-releasing.lua).
import { LuaScript } from '../../queues/script.js';

export const RENEW_SCRIPT = LuaScript.load('renew-lock');
export const RELEASE_SCRIPT = LuaScript.load('release-lock');
