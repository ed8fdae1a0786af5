-- A delete's (or GC's) generation.
-- KEYS: generation counter, results stream, latest generation, last request, request counter.
-- ARGV: generation TTL s, and optionally a request count ('' for none). Returns { generation,
-- last results id }, or { '0', last results id, 'requested' } when the instance's last request
-- came after that count.
--- @include "includes/next-generation"

local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local lastId = '0-0'
if #last > 0 then lastId = last[1][1] end
if ARGV[2] ~= nil and ARGV[2] ~= '' and
    tonumber(redis.call('GET', KEYS[4]) or '0') > tonumber(ARGV[2]) then
  return { '0', lastId, 'requested' }
end
local gen = nextGeneration(KEYS[1], KEYS[3], KEYS[4], KEYS[5], ARGV[1])
return { tostring(gen), lastId }
