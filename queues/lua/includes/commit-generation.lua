-- Commits a job's generation when its run begins: the instance's latest = max(latest, gen),
-- stored with its TTL (refreshed), and the create's reservation (nil for a delete) marked
-- enqueued. Returns the latest. One write in the usual case (the job's own generation is the
-- latest): SET ... GET, and the older value put back when it was higher.
local function commitGeneration(latestKey, gen, ttl, reservation)
  local latest = tonumber(redis.call('SET', latestKey, gen, 'EX', ttl, 'GET') or '0')
  if latest > gen then
    redis.call('SET', latestKey, latest, 'EX', ttl)
  else
    latest = gen
  end
  if reservation and redis.call('EXISTS', reservation) == 1 then
    redis.call('HSET', reservation, 'enqueued', '1')
  end
  return latest
end
