// A flash-sale service as a Node.js team would write it: the stock and the
// orders in Redis (ioredis), each purchase guarded by redis-semaphore's
// Mutex (SET NX PX with a random identifier, refreshed while held,
// released by a compare-and-delete script), speaking lockbench's
// black-box protocol (docs/target-protocol.md) on PORT.
//
//   PORT=8081 REDIS_URL=redis://127.0.0.1:6379 node server.js
//   LOCK=none ...      the same service without its lock: it oversells
//   LEASE_MS=300 ...   the Mutex's lockTimeout (default 10000, the library's)
//   HOLD_MS=2 ...      business time between reading the stock and writing it
const http = require('node:http');
const Redis = require('ioredis');
const { Mutex } = require('redis-semaphore');

const port = Number(process.env.PORT || 8081);
const host = process.env.HOST || '127.0.0.1';
const locked = process.env.LOCK !== 'none';
const prefix = process.env.PREFIX || 'shop:';
const stockKey = prefix + 'inventory001';
const ordersKey = prefix + 'orders';
const lockName = prefix + 'lock'; // redis-semaphore keeps it as mutex:shop:lock
const leaseMs = Number(process.env.LEASE_MS || 10000);
const holdMs = Number(process.env.HOLD_MS || 0);

const redis = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', { lazyConnect: true });
redis.on('error', (err) => console.error('redis:', err.message));

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// lost counts the locks redis-semaphore found lost while held (its
// refresh found another holder's value): by then the purchase has gone on
// without the lock. The library's default is to throw, which kills the
// process; a service that logs instead keeps selling.
let lost = 0;

// buy is the seeds' sale: read the stock and the user's orders, check,
// write stock-1 and the order.
async function buy(user) {
  const mutex = locked
    ? new Mutex(redis, lockName, { lockTimeout: leaseMs, acquireTimeout: 600000, retryInterval: 5, onLockLost: () => { lost++; } })
    : null;
  if (mutex) await mutex.acquire();
  try {
    const [stockText, ordersText] = await Promise.all([redis.get(stockKey), redis.hget(ordersKey, user)]);
    const stock = Number(stockText || 0);
    if (stock <= 0) return { outcome: 'sold-out', stock };
    if (Number(ordersText || 0) > 0) return { outcome: 'duplicate', stock };
    if (holdMs > 0) await sleep(holdMs);
    await redis.multi().set(stockKey, String(stock - 1)).hincrby(ordersKey, user, 1).exec();
    return { outcome: 'sold', stock };
  } finally {
    if (mutex) await mutex.release();
  }
}

function body(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (chunk) => { data += chunk; });
    req.on('end', () => { try { resolve(data ? JSON.parse(data) : {}); } catch (err) { reject(err); } });
    req.on('error', reject);
  });
}

function reply(res, status, value) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(value));
}

const server = http.createServer(async (req, res) => {
  try {
    if (req.method === 'POST' && req.url === '/lockbench/reset') {
      const { stock } = await body(req);
      await redis.multi().set(stockKey, String(stock)).del(ordersKey).exec();
      return reply(res, 200, {});
    }
    if (req.method === 'POST' && req.url === '/lockbench/buy') {
      const { user } = await body(req);
      return reply(res, 200, await buy(String(user)));
    }
    if (req.method === 'GET' && req.url === '/lockbench/state') {
      const [stock, orders] = await Promise.all([redis.get(stockKey), redis.hgetall(ordersKey)]);
      const counts = {};
      for (const [user, n] of Object.entries(orders)) counts[user] = Number(n);
      return reply(res, 200, { stock: Number(stock || 0), orders: counts });
    }
    reply(res, 404, { error: 'not found' });
  } catch (err) {
    // An error whose effect is unknown: a 500, which lockbench takes as an
    // unknown outcome, never as "nothing happened".
    reply(res, 500, { error: String(err && err.message) });
  }
});

redis.connect().then(() => {
  server.listen(port, host, () => console.log(`listening on http://${host}:${port} (lock ${locked ? 'redis-semaphore Mutex' : 'off'})`));
});

process.on('exit', () => { if (lost > 0) console.error(`${lost} locks lost while held`); });

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => { server.close(); redis.quit().finally(() => process.exit(0)); });
}
