-- The next generation of an instance: the request's place in the order of all requests (INCR
-- of one counter that never expires), raised above the instance's latest when something else
-- set that higher (the counter then follows it). So every generation is at most the counter,
-- and a new request comes after every earlier one of the instance even when the instance's own
-- keys lapsed under a job that waited longer than their TTL (a queue paused through an outage).
-- The caller commits it (SET the latest) once the job is in. Records the request's place (what
-- GC's start is read against) and, for a create, its uid after a space: '<place>' or
-- '<place> <uid>' (what GC's delete of a listed instance is checked against,
-- enqueue-delete.lua).
local function nextGeneration(latestKey, lastRequestKey, requestsKey, genTtl, uid)
  local place = redis.call('INCR', requestsKey)
  local latest = tonumber(redis.call('GET', latestKey) or '0')
  if latest >= place then
    place = latest + 1
    redis.call('SET', requestsKey, place)
  end
  redis.call('SET', lastRequestKey, uid == '' and place or (place .. ' ' .. uid), 'EX', genTtl)
  return place
end
