-- fair: Redisson's RedissonFairLock, a waiter that gives up (its wait ran
-- out, a command to the server failed, its caller went away) leaves the
-- queue, and each place behind it lapses a wait earlier, the wait it no
-- longer takes. A waiter that dies runs nothing: its place stays until it
-- lapses, and holds up everyone behind it until then.
-- KEYS[1] queue list; KEYS[2] timeouts zset; KEYS[3] channel prefix.
-- ARGV[1] owner; ARGV[2] wait ms (a place's life); ARGV[3] message.
local queue = redis.call('lrange', KEYS[1], 0, -1)
local at = nil
for i, w in ipairs(queue) do
  if w == ARGV[1] then
    at = i
    break
  end
end
if not at then
  return 0
end
for i = at + 1, #queue do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
-- The one who was next behind it may now be first: tell it to try.
if at == 1 and queue[2] then
  redis.call('publish', KEYS[3] .. queue[2], ARGV[3])
end
return 1
