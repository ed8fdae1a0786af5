-- A create's reservation of its uid, and its generation on first sight.
-- KEYS: create key, generation counter, results stream, latest generation, last request,
-- request counter. ARGV: job id, digest, reservation TTL s, generation TTL s, instance id.
-- Returns { jobId, generation, digest, enqueued, fresh, results id to read from, instance id }.
-- The results id is the stream's last id when the uid was first reserved, kept in the
-- reservation: a repeat's waitFor then still sees a result that came meanwhile.
--- @include "includes/next-generation"

local r = redis.call('HMGET', KEYS[1], 'jobId', 'generation', 'digest', 'enqueued', 'instanceId',
  'resultsFrom')
if r[1] then
  return { r[1], r[2], r[3] or '', r[4] or '0', '0', r[6] or '0-0', r[5] or ARGV[5] }
end
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
local lastId = '0-0'
if #last > 0 then lastId = last[1][1] end
local gen = nextGeneration(KEYS[2], KEYS[4], KEYS[5], KEYS[6], ARGV[4])
redis.call('HSET', KEYS[1], 'jobId', ARGV[1], 'generation', gen, 'digest', ARGV[2],
  'enqueued', '0', 'instanceId', ARGV[5], 'resultsFrom', lastId)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return { ARGV[1], tostring(gen), ARGV[2], '0', '1', lastId, ARGV[5] }
