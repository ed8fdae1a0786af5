-- The next generation of an instance: one above its latest (whose TTL every enqueue and every
-- job run refreshes), so a new request never comes out at or below an earlier one while a job
-- of the instance can still run. The caller commits it (SET the latest) once the job is in.
-- Records the request's place in the order of all requests (what GC's start is read against)
-- and, for a create, its uid after a space: '<place>' or '<place> <uid>' (what GC's delete of a
-- listed instance is checked against, enqueue-delete.lua).
local function nextGeneration(latestKey, lastRequestKey, requestsKey, genTtl, uid)
  local gen = tonumber(redis.call('GET', latestKey) or '0') + 1
  local place = redis.call('INCR', requestsKey)
  redis.call('SET', lastRequestKey, uid == '' and place or (place .. ' ' .. uid), 'EX', genTtl)
  return gen
end
