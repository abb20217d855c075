-- rw: Redisson's RedissonReadLock.unlockInnerAsync. Drops one level of the
-- owner's read lock and its lease key; the hash then lives as long as the
-- longest lease key left (of any reader), or goes, with a message that
-- wakes one waiter per node. nil: the owner holds no read lock (lockbench
-- also answers nil when the hash is gone, where Redisson answers 1);
-- 0: still held; 1: released.
-- KEYS[1] lock hash; KEYS[2] channel; KEYS[3] this owner's timeout-key
-- prefix; KEYS[4] the prefix of every owner's timeout keys.
-- ARGV[1] message; ARGV[2] owner.
local mode = redis.call('hget', KEYS[1], 'mode')
if (mode == false) then
  redis.call('publish', KEYS[2], ARGV[1])
  return nil
end
if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if (counter == 0) then
  redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (counter + 1))
if (redis.call('hlen', KEYS[1]) > 1) then
  local maxRemain = -3
  local keys = redis.call('hkeys', KEYS[1])
  for _, key in ipairs(keys) do
    local n = tonumber(redis.call('hget', KEYS[1], key))
    if type(n) == 'number' then
      for i = n, 1, -1 do
        local remain = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i)
        maxRemain = math.max(remain, maxRemain)
      end
    end
  end
  if maxRemain > 0 then
    redis.call('pexpire', KEYS[1], maxRemain)
    return 0
  end
  if mode == 'write' then
    return 0
  end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
