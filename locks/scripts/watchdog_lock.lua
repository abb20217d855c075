-- watchdog: Redisson's RedissonLock.tryLockInnerAsync (seed 003 eighth
-- rework, seed 004). Returns nil when the owner now holds the lock, else the
-- holder's remaining lease in ms, which bounds how long a waiter sleeps.
-- KEYS[1] lock key; ARGV[1] lease ms; ARGV[2] owner.
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
