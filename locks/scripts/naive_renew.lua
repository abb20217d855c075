-- renew-naive: seed 001's renewal thread as written. EXISTS with two
-- arguments counts how many of the two KEYS exist, and ARGV[1] (the owner
-- value) is never a key: so this renews whoever holds the lock now, and the
-- renewal only stops once the lock key is gone.
-- KEYS[1] lock key; ARGV[1] owner; ARGV[2] lease "seconds" used as ms.
if (redis.call('exists', KEYS[1], ARGV[1]) == 0) then
  return 0
end
redis.call('pexpire', KEYS[1], ARGV[2])
return 1
