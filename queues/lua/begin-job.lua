-- The start of a create or delete in one round trip: commit the job's generation, compare it
-- with the instance's latest, and when it is still the latest take the instance lock.
-- KEYS: latest generation, lock key, create key (or the lock key again when there is none).
-- ARGV: generation, generation TTL s, lock token, lock TTL ms, '1' when there is a reservation.
-- Returns { latest, state } with state 'superseded', 'locked' or 'busy'.
--- @include "includes/commit-generation"

local gen = tonumber(ARGV[1])
local reservation = nil
if ARGV[5] == '1' then reservation = KEYS[3] end
local latest = commitGeneration(KEYS[1], gen, ARGV[2], reservation)
if latest > gen then return { tostring(latest), 'superseded' } end
if redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4], 'NX') then
  return { tostring(latest), 'locked' }
end
return { tostring(latest), 'busy' }
