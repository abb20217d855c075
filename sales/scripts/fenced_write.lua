-- fenced: the store's write. Refused (0) when a newer token has touched the
-- store since; otherwise the stock and the order are written (1).
-- KEYS[1] stock; KEYS[2] orders hash; KEYS[3] the store's fence.
-- ARGV[1] token; ARGV[2] the new stock; ARGV[3] user.
local fence = tonumber(redis.call('get', KEYS[3]) or '0')
local token = tonumber(ARGV[1])
if token < fence then
  return 0
end
redis.call('set', KEYS[3], token)
redis.call('set', KEYS[1], ARGV[2])
redis.call('hincrby', KEYS[2], ARGV[3], 1)
return 1
