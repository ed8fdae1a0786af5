-- The end of a job's run in one round trip: release its lock (only while it holds the token)
-- and append its result to the stream.
-- KEYS: results stream, lock key (any key of the prefix when ARGV[1] is ''), the job's hash.
-- ARGV: lock token ('' when the run holds no lock), max length, the attempt when the result is
-- final ('' when it is not), then the entry's fields. Returns the entry's id.
--
-- One final result per attempt: a run whose end was lost (a Redis failover rolled the job back
-- to active, and it ran again after it stalled) finds its attempt's final result named in the
-- job's hash, and that one's id is returned instead of a second entry. A retry of a failed job
-- (Bull Board) is a later attempt and appends its own.
--- @include "includes/release-lock"

if ARGV[1] ~= '' then
  releaseLock(KEYS[2], ARGV[1])
end
local final = ARGV[3]
if final ~= '' then
  local earlier = redis.call('HGET', KEYS[3], 'kvm2Final')
  if earlier then
    local attempt, id = string.match(earlier, '^(%S+) (%S+)$')
    if attempt == final then
      return id
    end
  end
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 4))
if final ~= '' and redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HSET', KEYS[3], 'kvm2Final', final .. ' ' .. id)
end
return id
