-- The producer's commit, once the job is in its queue.
-- KEYS: latest generation [, create key]. ARGV: generation, generation TTL s. Returns the latest.
--- @include "includes/commit-generation"

return tostring(commitGeneration(KEYS[1], tonumber(ARGV[1]), ARGV[2], KEYS[2]))
