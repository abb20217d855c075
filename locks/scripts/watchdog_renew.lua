-- watchdog: renewal (seed 003 eighth rework renewExpire, Redisson's
-- renewExpirationAsync): extend the lease only while this owner holds it.
-- KEYS[1] lock key; ARGV[1] owner; ARGV[2] lease ms.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0
