-- Allocates the next generation of an instance: never at or below the latest committed one,
-- even when the counter lapsed before gen-latest (whose TTL every job run refreshes), so a new
-- request never comes out older than an earlier one. Records the request's place in the order
-- of all requests (what GC's start is read against).
local function nextGeneration(counterKey, latestKey, lastRequestKey, requestsKey, genTtl)
  local gen = redis.call('INCR', counterKey)
  local latestNow = tonumber(redis.call('GET', latestKey) or '0')
  if gen <= latestNow then
    gen = latestNow + 1
    redis.call('SET', counterKey, gen)
  end
  redis.call('EXPIRE', counterKey, genTtl)
  redis.call('SET', lastRequestKey, redis.call('INCR', requestsKey), 'EX', genTtl)
  return gen
end
