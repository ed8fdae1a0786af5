--- @include "includes/commit-generation"

-- The start of a create or delete: commit the job's generation, compare it with the instance's
-- latest, and when it is still the latest take the instance lock (SET NX PX with the run's
-- token). `reservation` is a create's reservation key (nil for a delete). Returns the latest
-- generation and 'superseded', 'locked' or 'busy'.
local function beginInstance(latestKey, gen, genTtl, reservation, lockKey, token, lockTtl)
  local latest = commitGeneration(latestKey, gen, genTtl, reservation)
  if latest > gen then return latest, 'superseded' end
  if redis.call('SET', lockKey, token, 'PX', lockTtl, 'NX') then
    return latest, 'locked'
  end
  return latest, 'busy'
end
