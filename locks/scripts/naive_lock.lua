-- renew-naive: seed 001 last version, lock script as written. ARGV[2] is the
-- lease the caller gave in seconds, passed to PEXPIRE as milliseconds: the
-- seed mixes units, and lockbench keeps it.
-- KEYS[1] lock key; ARGV[1] owner; ARGV[2] lease "seconds" used as ms.
if (redis.call('exists', KEYS[1]) == 0) then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
if (redis.call('hexists', KEYS[1], ARGV[1]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
else
  return 0
end
