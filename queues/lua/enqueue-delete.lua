-- A delete enqueued in one step: its generation allocated and committed and its job added,
-- atomically (queues/generations.ts).
-- KEYS: the queue's id, meta, active, wait, marker, events; the job's hash; results stream,
-- latest generation, last request, request counter.
-- ARGV: job id, the job's data as JSON up to its generation's value, opts JSON, timestamp,
-- generation TTL s, a request count ('' for none: GC's unrequestedSince), the job's begin
-- as JSON up to its generation's value (kept in the job's hash as `kvm2Begin`: what a
-- completion that fetches the job begins it with, complete-job.lua), and the uid GC listed
-- ('' for none).
-- Returns { generation, results id to read from }; nothing is enqueued, and { '0', results id,
-- 'requested' } returned, when the instance's last request came after that count, or
-- { '0', results id, 'replaced' } when it is a create of another uid than the one listed (a
-- create replacing the instance, not run yet: the delete would supersede it).
--- @include "includes/add-bullmq-job"
--- @include "includes/next-generation"

local q = queueKeys()
local taken = jobIdTaken(q, ARGV[1])
if taken then return taken end
local from = lastResultId(KEYS[8])
if ARGV[6] ~= '' then
  local place, uid = string.match(redis.call('GET', KEYS[10]) or '0', '^(%d+) ?(.*)$')
  if tonumber(place) > tonumber(ARGV[6]) then return { '0', from, 'requested' } end
  if ARGV[8] ~= '' and uid ~= '' and uid ~= ARGV[8] then return { '0', from, 'replaced' } end
end
local gen = nextGeneration(KEYS[9], KEYS[10], KEYS[11], ARGV[5], '')
addBullmqJob(q, ARGV[1], 'delete', ARGV[2] .. gen .. '}', ARGV[3], ARGV[4],
  ARGV[7] .. gen .. '}')
redis.call('SET', KEYS[9], gen, 'EX', ARGV[5])
return { tostring(gen), from }
