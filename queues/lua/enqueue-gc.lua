-- A GC round enqueued in one step: its job carries the request count of this moment (what its
-- keep list is as of: a request made from here on wins over the GC, queues/generations.ts).
-- KEYS: the queue's id, meta, active, wait, marker, events; the job's hash; results stream,
-- request counter.
-- ARGV: job id, the job's data as JSON up to requestsBefore's value, opts JSON, timestamp.
-- Returns the results id to read from.
--- @include "includes/add-bullmq-job"

local q = queueKeys()
local taken = jobIdTaken(q, ARGV[1])
if taken then return taken end
local from = lastResultId(KEYS[8])
local count = redis.call('GET', KEYS[9]) or '0'
addBullmqJob(q, ARGV[1], 'gc', ARGV[2] .. count .. '}', ARGV[3], ARGV[4])
return from
