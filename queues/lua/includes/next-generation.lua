-- The next generation of an instance: one above its latest (whose TTL every enqueue and every
-- job run refreshes), so a new request never comes out at or below an earlier one while a job
-- of the instance can still run. The caller commits it (SET the latest) once the job is in.
-- Records the request's place in the order of all requests (what GC's start is read against).
local function nextGeneration(latestKey, lastRequestKey, requestsKey, genTtl)
  local gen = tonumber(redis.call('GET', latestKey) or '0') + 1
  redis.call('SET', lastRequestKey, redis.call('INCR', requestsKey), 'EX', genTtl)
  return gen
end
