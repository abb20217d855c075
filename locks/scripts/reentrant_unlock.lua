-- reentrant: unlock (seed 003 seventh rework, unlock script v2).
-- nil when the owner holds nothing (the seed then throws "This lock doesn't
-- EXIST"); 1 when the last level was released and the key deleted; 0 when
-- levels remain.
-- KEYS[1] lock key; ARGV[1] owner.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return nil
elseif redis.call('HINCRBY', KEYS[1], ARGV[1], -1) == 0 then
  return redis.call('del', KEYS[1])
else
  return 0
end
