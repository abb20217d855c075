-- reentrant: hash lock, HINCRBY per owner (seed 003 seventh rework, script v3;
-- seed 001 version 5). The seed calls EXPIRE in seconds; lockbench uses
-- PEXPIRE so that sub-second leases work in tests. Nothing else differs.
-- KEYS[1] lock key; ARGV[1] owner (uuid:thread); ARGV[2] lease ms.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
else
  return 0
end
