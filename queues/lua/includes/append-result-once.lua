-- Appends a run's result to the results stream, a final one once per attempt: a run whose end
-- was lost (a Redis failover rolled the job back to active, and it ran again after it stalled)
-- finds its attempt's final result named in the job's hash (`kvm2Final`), and that one's id is
-- returned instead of a second entry. A retry of a failed job (Bull Board) is a later attempt
-- and appends its own. `final` is the attempt when the result is final, '' when it is not; the
-- entry's fields are ARGV[firstField] onwards. Returns the entry's id and whether this call
-- appended it; the caller names an appended final result in the job's hash (recordFinal)
-- unless the same script completes the job.
local function appendResultOnce(resultsKey, jobKey, maxLen, final, firstField)
  if final ~= '' then
    local earlier = redis.call('HGET', jobKey, 'kvm2Final')
    if earlier then
      local attempt, id = string.match(earlier, '^(%S+) (%S+)$')
      if attempt == final then
        return id, false
      end
    end
  end
  return redis.call('XADD', resultsKey, 'MAXLEN', '~', maxLen, '*', unpack(ARGV, firstField)), true
end

-- Names an attempt's final result (its stream id) in the job's hash, while the job exists.
local function recordFinal(jobKey, final, id)
  if final ~= '' and redis.call('EXISTS', jobKey) == 1 then
    redis.call('HSET', jobKey, 'kvm2Final', final .. ' ' .. id)
  end
end
