-- spin: Redisson's RedissonSpinLock.unlockInnerAsync: the hash lock's
-- release without a publish (nobody subscribes: waiters spin).
-- nil: not held by this owner; 0: levels remain; 1: released.
-- KEYS[1] lock key; ARGV[1] lease ms; ARGV[2] owner.
if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
return 1
