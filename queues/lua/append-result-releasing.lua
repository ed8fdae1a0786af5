-- The end of a job's run that does not complete it (a failure, a retry), in one round trip:
-- release its lock (only while it holds the token) and append its result to the stream, a final
-- one once per attempt (includes/append-result-once.lua). A run that completes its job does both
-- in the completion itself (complete-job.lua).
-- KEYS: results stream, lock key (any key of the prefix when ARGV[1] is ''), the job's hash.
-- ARGV: lock token ('' when the run holds no lock), max length, the attempt when the result is
-- final ('' when it is not), then the entry's fields. Returns the entry's id.
--- @include "includes/release-lock"
--- @include "includes/append-result-once"

if ARGV[1] ~= '' then
  releaseLock(KEYS[2], ARGV[1])
end
local id, appended = appendResultOnce(KEYS[1], KEYS[3], ARGV[2], ARGV[3], 4)
if appended then
  recordFinal(KEYS[3], ARGV[3], id)
end
return id
