-- rw: Redisson's RedissonWriteLock.unlockInnerAsync. The last level of the
-- write lock deletes the hash and publishes the message that wakes every
-- waiter of a node (readers may all enter), or, when the writer also took
-- read locks, leaves them in read mode. nil: not held by this owner
-- (lockbench also answers nil when the hash is gone, where Redisson
-- answers 1); 0: levels remain; 1: released.
-- KEYS[1] lock hash; KEYS[2] channel.
-- ARGV[1] message; ARGV[2] lease ms; ARGV[3] owner's write-lock name.
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
  redis.call('publish', KEYS[2], ARGV[1])
  return nil
end
if (mode ~= 'write') or (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if (redis.call('hlen', KEYS[1]) == 1) then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
return 1
