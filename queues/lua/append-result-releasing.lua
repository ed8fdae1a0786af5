-- The end of a job in one round trip: release its lock (only while it holds the token) and
-- append its result to the stream.
-- KEYS: results stream, lock key. ARGV: lock token, max length, then the entry's fields.
-- Returns the entry's id.
--- @include "includes/release-lock"

releaseLock(KEYS[2], ARGV[1])
return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 3))
