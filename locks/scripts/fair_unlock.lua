-- fair: Redisson's RedissonFairLock, its release: lapsed places leave the
-- head of the queue, then the last level of the owner's hold frees the
-- lock and the head of the queue is told, on a channel of its own.
-- KEYS[1] lock hash; KEYS[2] queue list; KEYS[3] timeouts zset;
-- KEYS[4] channel prefix (the waiter's owner value follows it).
-- ARGV[1] message; ARGV[2] lease ms; ARGV[3] owner; ARGV[4] the client's now, ms.
-- nil: not held by this owner; 0: levels remain; 1: released.
local now = tonumber(ARGV[4])
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if not head then break end
  local lapse = tonumber(redis.call('zscore', KEYS[3], head))
  if lapse == nil or lapse > now then break end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
end
local function tell_next()
  local head = redis.call('lindex', KEYS[2], 0)
  if head then
    redis.call('publish', KEYS[4] .. head, ARGV[1])
  end
end
if redis.call('exists', KEYS[1]) == 0 then
  tell_next()
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
tell_next()
return 1
