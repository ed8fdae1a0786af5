-- The end of a run that completes its job, in one round trip: release the instance lock (only
-- while it holds the token), append the result (a final one once per attempt), then BullMQ's own
-- moveToFinished, which queues/complete.ts appends to this text from the installed BullMQ (its
-- KEYS and ARGV come first, so its script reads them where it always does). kvm2's part runs
-- first, as it did when it was a round trip of its own before BullMQ's: a completion BullMQ
-- refuses (the job's lock lost) still leaves the attempt's result, which the run after the stall
-- ends with.
-- KEYS[1..14]: moveToFinished's; KEYS[15] the results stream, KEYS[16] the lock key (the job's
-- hash when the run holds no lock).
-- ARGV[1..9]: moveToFinished's; ARGV[10] lock token ('' for none), ARGV[11] the stream's max
-- length, ARGV[12] the attempt when the result is final ('' when not), ARGV[13..] its fields.
--- @include "includes/release-lock"
--- @include "includes/append-result-once"

do
  if ARGV[10] ~= '' then
    releaseLock(KEYS[16], ARGV[10])
  end
  appendResultOnce(KEYS[15], KEYS[12], ARGV[11], ARGV[12], 13)
end
