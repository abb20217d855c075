-- renew-naive: seed 001's unlock script as written.
-- KEYS[1] lock key; ARGV[1] owner; ARGV[2] default lease "seconds" used as ms.
if (redis.call('hexists', KEYS[1], ARGV[1]) == 0) then
  return 0
end
local lockCount = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if (lockCount > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
else
  redis.call('del', KEYS[1])
  return 1
end
