-- watchdog: Redisson's RedissonLock.unlockInnerAsync. Publishes on the
-- lock's channel when the last level is released, so that one waiter per
-- node wakes up. nil: not held by this owner; 0: levels remain; 1: released.
-- KEYS[1] lock key; KEYS[2] channel; ARGV[1] message; ARGV[2] lease ms; ARGV[3] owner.
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
