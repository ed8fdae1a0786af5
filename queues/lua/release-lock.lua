-- KEYS: lock key. ARGV: token. Returns 1 deleted, 0 not ours (gone or another holder's).
--- @include "includes/release-lock"

return releaseLock(KEYS[1], ARGV[1])
