-- The end of a job's run that does not complete it (a failure, a retry), in one round trip:
-- release its lock (only while it holds the token) and append its result to the stream, a final
-- one once per attempt (includes/append-result-once.lua). A run that completes its job does both
-- in the completion itself (complete-job.lua). A run that names its BullMQ token appends only
-- while the job is still its own (`<job>:lock` holds that token): a run whose job stalled away
-- from it (its worker cut off from Redis, or paused, past the lock) and was run, or finished,
-- by another leaves the result to that run, which writes the attempt's own.
-- KEYS: results stream, lock key (any key of the prefix when ARGV[1] is ''), the job's hash,
-- the job's BullMQ lock key (any key of the prefix when ARGV[4] is '').
-- ARGV: lock token ('' when the run holds no lock), max length, the attempt when the result is
-- final ('' when it is not), the run's BullMQ token ('' for a writer that does not run the job),
-- then the entry's fields. Returns the entry's id, '' when the job is no longer the run's.
--- @include "includes/release-lock"
--- @include "includes/append-result-once"

if ARGV[1] ~= '' then
  releaseLock(KEYS[2], ARGV[1])
end
if ARGV[4] ~= '' and redis.call('GET', KEYS[4]) ~= ARGV[4] then
  return ''
end
local id, appended = appendResultOnce(KEYS[1], KEYS[3], ARGV[2], ARGV[3], 5)
if appended then
  recordFinal(KEYS[3], ARGV[3], id)
end
return id
