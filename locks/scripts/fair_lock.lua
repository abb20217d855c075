-- fair: Redisson's RedissonFairLock (seed 004's family), its lock step.
-- Waiters queue in a list in the order of their first try; a sorted set
-- holds the instant each one's place lapses, so that a waiter that stopped
-- trying (a dead client) is dropped from the head of the queue in time.
-- The instants come from the calling client's clock, as in Redisson.
-- KEYS[1] lock hash; KEYS[2] queue list; KEYS[3] timeouts zset.
-- ARGV[1] lease ms; ARGV[2] owner; ARGV[3] wait ms (a place's life);
-- ARGV[4] the client's now, ms.
-- Returns nil when the owner holds the lock, else how long to wait, ms.
local now = tonumber(ARGV[4])
local wait = tonumber(ARGV[3])
-- Places that lapsed leave the head of the queue.
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if not head then break end
  local lapse = tonumber(redis.call('zscore', KEYS[3], head))
  if lapse == nil or lapse > now then break end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
end
-- Free, and nobody queued ahead: take it, and give the others the wait
-- this owner no longer takes.
if redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[2], 0)
  if (not head) or head == ARGV[2] then
    if head then
      redis.call('lpop', KEYS[2])
    end
    redis.call('zrem', KEYS[3], ARGV[2])
    for _, w in ipairs(redis.call('zrange', KEYS[3], 0, -1)) do
      redis.call('zincrby', KEYS[3], -wait, w)
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
  end
end
-- Held by this owner already: one level more.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
-- Queued already: wait about until the place ahead lapses.
local mine = redis.call('zscore', KEYS[3], ARGV[2])
if mine then
  return tonumber(mine) - wait - now
end
-- Join the queue at its end: this place lapses a wait after the one ahead
-- (or after the holder's lease when nobody is queued).
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last and last ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - now
else
  ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + wait + now, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
