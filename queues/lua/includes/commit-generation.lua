-- Commits a job's generation: the instance's latest = max(latest, gen), stored with its TTL,
-- and the create's reservation (nil for a delete) marked enqueued. Returns the latest.
local function commitGeneration(latestKey, gen, ttl, reservation)
  local latest = tonumber(redis.call('GET', latestKey) or '0')
  if gen > latest then latest = gen end
  redis.call('SET', latestKey, tostring(latest), 'EX', ttl)
  if reservation and redis.call('EXISTS', reservation) == 1 then
    redis.call('HSET', reservation, 'enqueued', '1')
  end
  return latest
end
