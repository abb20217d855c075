-- atomic: the sale as one server-side step, the Redis form of the seeds'
-- conditional UPDATE (seed 001 deductStockMySqlPessimistic, seed 002
-- tryUpdate): check the user's order and the stock, then decrement and
-- record the order, with nothing in between.
-- KEYS[1] stock; KEYS[2] orders hash; ARGV[1] user.
-- Returns {stock read, 1 if sold else 0, 1 if the user already had an order}.
local stock = tonumber(redis.call('get', KEYS[1]) or '0')
if tonumber(redis.call('hget', KEYS[2], ARGV[1]) or '0') > 0 then
  return {stock, 0, 1}
end
if stock > 0 then
  redis.call('set', KEYS[1], stock - 1)
  redis.call('hincrby', KEYS[2], ARGV[1], 1)
  return {stock, 1, 0}
end
return {stock, 0, 0}
