-- lua: compare-and-delete unlock.
-- Seed 000 final version, seed 001 version 4, seed 003 fifth rework, seed 004:
-- delete the lock only if it still holds our owner value.
-- KEYS[1] lock key; ARGV[1] owner value.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
