-- rw: Redisson's RedissonWriteLock.tryLockInnerAsync. A writer enters only
-- when nobody holds the lock, or again when it holds the write lock (each
-- level adds a lease to the expiry, as in Redisson). Returns nil when the
-- owner now holds the write lock, else the remaining lease in ms.
-- KEYS[1] lock hash; ARGV[1] lease ms; ARGV[2] owner's write-lock name.
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if (mode == 'write') and (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local current = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], current + tonumber(ARGV[1]))
  return nil
end
return redis.call('pttl', KEYS[1])
