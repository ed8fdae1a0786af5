-- An instance's change, published once: appended to the results stream only when it differs
-- from the state last published for it, and only by the holder of the host's watch lease (a
-- watcher that lost its lease publishes nothing, whatever it still believes).
-- KEYS: watch lease key, the host's instance-state hash, results stream.
-- ARGV: lease token, domain name, new value ('<uid> <state> <address or ->', '' for gone),
--   '1' when the domain was never started (nothing to say unless something was said before),
--   max length, then the entry's fields. The entry gets `previous` (the state last published)
--   and, for gone, the `uid` it had. Read from the value's end: state and address are single
--   words, the uid (read back from a domain's metadata) may hold anything.
-- Returns the entry's id; 0 when nothing changed; -1 when the lease is not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local prev = redis.call('HGET', KEYS[2], ARGV[2])
local fields = {}
for i = 6, #ARGV do fields[#fields + 1] = ARGV[i] end
if ARGV[3] == '' then
  if not prev then return 0 end
  redis.call('HDEL', KEYS[2], ARGV[2])
  fields[#fields + 1] = 'uid'
  fields[#fields + 1] = string.match(prev, '^(.*) %S+ %S+$')
else
  if prev == ARGV[3] then return 0 end
  if not prev and ARGV[4] == '1' then return 0 end
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
end
if prev then
  fields[#fields + 1] = 'previous'
  fields[#fields + 1] = string.match(prev, '(%S+) %S+$')
end
return redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', unpack(fields))
