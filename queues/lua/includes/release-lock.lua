-- Deletes a lock only while it still holds the caller's token, so a holder never deletes a
-- lock that has passed to someone else. Returns 1 deleted, 0 not ours (gone or another's).
local function releaseLock(lockKey, token)
  if redis.call('GET', lockKey) == token then
    return redis.call('DEL', lockKey)
  end
  return 0
end
