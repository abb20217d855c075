-- fenced: SET NX PX plus a monotonic fencing token (beyond the seeds: the
-- fix Kleppmann describes for pauses and expiries). The token is handed out
-- in the same step that takes the lock, so tokens follow lock order.
-- KEYS[1] lock key; KEYS[2] token counter; ARGV[1] owner value; ARGV[2] lease ms.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
return 0
