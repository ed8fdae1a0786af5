-- A job added to a BullMQ queue as BullMQ 6's own add does it (its addStandardJob): the job's
-- hash, the `added` and `waiting` events, the id on the wait list and, unless the queue is paused
-- or at its global concurrency, the marker that wakes a blocked worker. Only what kvm2's jobs
-- use: a custom job id, FIFO, no delay, priority, parent or deduplication. Written from BullMQ's
-- key layout so that a kvm2 enqueue is one script, its generation and its job in one atomic
-- step; test/integration/bullmq-add.test.ts compares what it writes with what Queue.add writes
-- and fails when a BullMQ upgrade changes the layout (package.json pins the version).
-- kvm2's one field beside BullMQ's: `begin` (nil for none), the job's begin (`kvm2Begin`, what
-- a completion that fetches the job begins it with, complete-job.lua).
-- Keys in `q`: id, meta, active, wait, marker, events, job. The job id must be new: each
-- script refuses one that exists (jobIdTaken) before it writes anything.
local function addBullmqJob(q, jobId, name, data, opts, timestamp, begin)
  redis.call('INCR', q.id)
  local maxEvents = redis.call('HGET', q.meta, 'opts.maxLenEvents')
  if not maxEvents then
    maxEvents = 10000
    redis.call('HSET', q.meta, 'opts.maxLenEvents', maxEvents)
  end
  if begin then
    redis.call('HSET', q.job, 'name', name, 'data', data, 'opts', opts, 'timestamp', timestamp,
      'delay', 0, 'priority', 0, 'kvm2Begin', begin)
  else
    redis.call('HSET', q.job, 'name', name, 'data', data, 'opts', opts, 'timestamp', timestamp,
      'delay', 0, 'priority', 0)
  end
  redis.call('XADD', q.events, '*', 'event', 'added', 'jobId', jobId, 'name', name)
  local meta = redis.call('HMGET', q.meta, 'paused', 'concurrency')
  local held = meta[1] ~= false
  if not held and meta[2] then
    held = redis.call('LLEN', q.active) >= tonumber(meta[2])
  end
  redis.call('LPUSH', q.wait, jobId)
  if not held then
    redis.call('ZADD', q.marker, 0, '0')
  end
  redis.call('XADD', q.events, 'MAXLEN', '~', maxEvents, '*', 'event', 'waiting', 'jobId', jobId)
end

-- KEYS[1..7] of every enqueue script: the queue's id, meta, active, wait, marker and events keys
-- and the job's hash.
local function queueKeys()
  return { id = KEYS[1], meta = KEYS[2], active = KEYS[3], wait = KEYS[4], marker = KEYS[5],
    events = KEYS[6], job = KEYS[7] }
end

-- An error reply when the job's id is taken (job ids are random UUIDs: never, in practice).
local function jobIdTaken(q, jobId)
  if redis.call('EXISTS', q.job) == 1 then
    return redis.error_reply('ERR kvm2: job id ' .. jobId .. ' exists in its queue')
  end
  return nil
end

-- The results stream's newest id ('0-0' when empty): where a wait for the job reads from.
local function lastResultId(resultsKey)
  local last = redis.call('XREVRANGE', resultsKey, '+', '-', 'COUNT', 1)
  if #last > 0 then return last[1][1] end
  return '0-0'
end
