-- A create enqueued in one step (queues/generations.ts): a create whose uid is reserved gets
-- the reserved job back and nothing is written; otherwise its uid is reserved, its generation
-- allocated and committed and its job added, atomically.
-- KEYS: the queue's id, meta, active, wait, marker, events; the job's hash; results stream,
-- latest generation, last request, request counter, create key.
-- ARGV: job id, the job's data as JSON up to its generation's value, opts JSON, timestamp,
-- generation TTL s, digest, reservation TTL s, instance id, the job's begin as JSON up to
-- its generation's value (kept in the job's hash as `kvm2Begin`: what a completion that fetches
-- the job begins it with, complete-job.lua), and the uid.
-- Returns { jobId, generation, digest, fresh, results id to read from, instance id }. The
-- results id is the stream's last id when the uid was first reserved, kept in the
-- reservation: a repeat's waitFor then still sees a result that came meanwhile.
--- @include "includes/add-bullmq-job"
--- @include "includes/next-generation"

local r = redis.call('HMGET', KEYS[12], 'jobId', 'generation', 'digest', 'instanceId',
  'resultsFrom')
if r[1] then
  return { r[1], r[2], r[3] or '', '0', r[5] or '0-0', r[4] or ARGV[8] }
end
local q = queueKeys()
local taken = jobIdTaken(q, ARGV[1])
if taken then return taken end
local from = lastResultId(KEYS[8])
local gen = nextGeneration(KEYS[9], KEYS[10], KEYS[11], ARGV[5], ARGV[10])
addBullmqJob(q, ARGV[1], 'create', ARGV[2] .. gen .. '}', ARGV[3], ARGV[4],
  ARGV[9] .. gen .. '}')
redis.call('SET', KEYS[9], gen, 'EX', ARGV[5])
redis.call('HSET', KEYS[12], 'jobId', ARGV[1], 'generation', gen, 'digest', ARGV[6],
  'enqueued', '1', 'instanceId', ARGV[8], 'resultsFrom', from)
redis.call('EXPIRE', KEYS[12], ARGV[7])
return { ARGV[1], tostring(gen), ARGV[6], '1', from, ARGV[8] }
