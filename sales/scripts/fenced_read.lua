-- fenced: the store's read. The store remembers the highest fencing token
-- it has seen on any access; a read with a newer token raises it, so that a
-- holder whose lease lapsed can no longer write what it read.
-- KEYS[1] stock; KEYS[2] orders hash; KEYS[3] the store's fence.
-- ARGV[1] token; ARGV[2] user. Returns {stock, orders of the user}.
local fence = tonumber(redis.call('get', KEYS[3]) or '0')
local token = tonumber(ARGV[1])
if token > fence then
  redis.call('set', KEYS[3], token)
end
return {tonumber(redis.call('get', KEYS[1]) or '0'), tonumber(redis.call('hget', KEYS[2], ARGV[2]) or '0')}
