-- The end of a run that completes its job, in one round trip: release the instance lock (only
-- while it holds the token), append the result (a final one once per attempt), BullMQ's own
-- moveToFinished, and the begin of the job it fetched next. workers/run/completion.ts puts the
-- installed BullMQ's moveToFinished text, wrapped in a function, in place of the `@bullmq` line;
-- its KEYS and ARGV come first, so it reads them where it always does.
--
-- kvm2's end runs before BullMQ's part, as it did when it was a round trip of its own: a
-- completion BullMQ refuses (the job's lock lost) still leaves the attempt's result, named in
-- the job's hash (`kvm2Final`), which the run after the stall ends with. The job BullMQ fetched
-- next begins here as begin-job.lua would begin it (generation committed and compared, instance
-- lock taken with ARGV[10]), when its hash names its begin (`kvm2Begin`, written by kvm2's
-- enqueue scripts); the worker checks that begin against the job's data before it trusts it
-- (workers/run/admission.ts).
-- KEYS[1..14]: moveToFinished's; KEYS[15] the results stream, KEYS[16] the lock key (the job's
-- hash when the run holds no lock).
-- ARGV[1..9]: moveToFinished's; ARGV[10] the next job's lock token ('' for no begin), ARGV[11]
-- the lock TTL ms, ARGV[12] the generation TTL s; ARGV[13] this run's lock token ('' for none),
-- ARGV[14] the stream's max length, ARGV[15] the attempt when the result is final ('' when
-- not), ARGV[16..] its fields.
-- Returns moveToFinished's reply; when it fetched a job that began here, with the begin's
-- latest generation and state ('superseded', 'locked', 'busy') as its 5th and 6th elements.
--- @include "includes/release-lock"
--- @include "includes/append-result-once"
--- @include "includes/begin-instance"

-- A fetched job's begin as kvm2's enqueue scripts write it; nil when it cannot be read (a job
-- some other producer added): the job's run then begins it itself (begin-job.lua), and the
-- script does not fail after BullMQ's part has run.
local function readBegin(text)
  local ok, b = pcall(cjson.decode, text)
  if not ok or type(b) ~= 'table' or type(b['latest']) ~= 'string'
    or type(b['lock']) ~= 'string' or not tonumber(b['generation']) then
    return nil
  end
  return b
end

if ARGV[13] ~= '' then
  releaseLock(KEYS[16], ARGV[13])
end
local id, appended = appendResultOnce(KEYS[15], KEYS[12], ARGV[14], ARGV[15], 16)

--- @bullmq moveToFinished

local result = bullmqMoveToFinished()
if type(result) == 'number' and result ~= 0 then
  -- Refused (the job's lock lost, or not active). When the job is completed already, another
  -- run of this script completed it: this one was sent again after its reply was lost (ioredis
  -- resends what a reset connection left unanswered), or it is a stalled run that another run
  -- of the attempt outran. That run's result stands, and this one's entry goes. Otherwise the
  -- run after the stall ends with this result. A completed job needs no record: this script's
  -- writes reach a replica together or not at all.
  if appended then
    if redis.call('ZSCORE', KEYS[11], ARGV[1]) then
      redis.call('XDEL', KEYS[15], id)
    else
      recordFinal(KEYS[12], ARGV[15], id)
    end
  end
elseif ARGV[10] ~= '' and type(result) == 'table' and type(result[1]) == 'table' then
  -- The job fetched next: its hash's fields, as BullMQ's fetch returns them. One that BullMQ
  -- fails without running it (`defa`: it stalled more than allowed) is not begun: nothing would
  -- release its lock.
  local fields, begin = result[1], nil
  for i = 1, #fields - 1, 2 do
    if fields[i] == 'kvm2Begin' then
      begin = fields[i + 1]
    elseif fields[i] == 'defa' then
      begin = nil
      break
    end
  end
  local b = begin and readBegin(begin)
  if b then
    local reservation = nil
    if type(b['reservation']) == 'string' and b['reservation'] ~= '' then
      reservation = b['reservation']
    end
    local latest, state = beginInstance(b['latest'], tonumber(b['generation']), ARGV[12],
      reservation, b['lock'], ARGV[10], ARGV[11])
    result[5] = tostring(latest)
    result[6] = state
  end
end
return result
