-- Extends a lock only while it holds the caller's token.
-- KEYS: lock key. ARGV: token, TTL ms. Returns 1 renewed, 0 key gone, -1 another token.
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
elseif v then
  return -1
end
return 0
