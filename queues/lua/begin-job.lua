-- The start of a create or delete in one round trip: commit the job's generation, compare it
-- with the instance's latest, and when it is still the latest take the instance lock. A job
-- that a completion fetched has begun already, in that completion (complete-job.lua).
-- KEYS: latest generation, lock key, create key (or the lock key again when there is none).
-- ARGV: generation, generation TTL s, lock token, lock TTL ms, '1' when there is a reservation.
-- Returns { latest, state } with state 'superseded', 'locked' or 'busy'.
--- @include "includes/begin-instance"

local reservation = nil
if ARGV[5] == '1' then reservation = KEYS[3] end
local latest, state = beginInstance(KEYS[1], tonumber(ARGV[1]), ARGV[2], reservation, KEYS[2],
  ARGV[3], ARGV[4])
return { tostring(latest), state }
