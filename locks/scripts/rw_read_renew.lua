-- rw: Redisson's RedissonReadLock.renewExpirationAsync, the readers'
-- watchdog: while the owner holds a read lock, extend the hash and the
-- lease key of every reader (not only the owner's: Redisson renews them
-- all, so a live reader keeps a paused or dead one's entry alive).
-- KEYS[1] lock hash; KEYS[2] the prefix of every owner's timeout keys.
-- ARGV[1] lease ms; ARGV[2] owner.
if (redis.call('hget', KEYS[1], ARGV[2]) == false) then
  return 0
end
redis.call('pexpire', KEYS[1], ARGV[1])
if (redis.call('hlen', KEYS[1]) > 1) then
  local keys = redis.call('hkeys', KEYS[1])
  for _, key in ipairs(keys) do
    local n = tonumber(redis.call('hget', KEYS[1], key))
    if type(n) == 'number' then
      for i = n, 1, -1 do
        redis.call('pexpire', KEYS[2] .. ':' .. key .. ':rwlock_timeout:' .. i, ARGV[1])
      end
    end
  end
end
return 1
