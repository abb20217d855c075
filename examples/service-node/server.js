// A flash-sale service as a Node.js team would write it: the stock and the
// orders in Redis, the purchase guarded by a Redis lock (SET NX PX with a
// random value, released by a compare-and-delete script), speaking
// lockbench's black-box protocol (docs/target-protocol.md) on PORT.
//
//   PORT=8081 REDIS_URL=redis://127.0.0.1:6379 node server.js
//   LOCK=none ...   the same service without its lock: it oversells
const http = require('node:http');
const crypto = require('node:crypto');
const { createClient } = require('redis');

const port = Number(process.env.PORT || 8081);
const host = process.env.HOST || '127.0.0.1';
const locked = process.env.LOCK !== 'none';
const prefix = process.env.PREFIX || 'shop:';
const stockKey = prefix + 'inventory001';
const ordersKey = prefix + 'orders';
const lockKey = prefix + 'lock';
const leaseMs = Number(process.env.LEASE_MS || 5000);

const redis = createClient({ url: process.env.REDIS_URL || 'redis://127.0.0.1:6379' });
redis.on('error', (err) => console.error('redis:', err.message));

const unlockScript = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function lock() {
  const owner = crypto.randomUUID();
  for (let wait = 1; ; wait = Math.min(2 * wait, 32)) {
    if (await redis.set(lockKey, owner, { NX: true, PX: leaseMs })) return owner;
    await sleep(1 + Math.random() * wait);
  }
}

async function unlock(owner) {
  await redis.eval(unlockScript, { keys: [lockKey], arguments: [owner] });
}

// buy is the seeds' sale: read the stock and the user's orders, check,
// write stock-1 and the order.
async function buy(user) {
  const owner = locked ? await lock() : null;
  try {
    const [stockText, ordersText] = await Promise.all([redis.get(stockKey), redis.hGet(ordersKey, user)]);
    const stock = Number(stockText || 0);
    if (stock <= 0) return { outcome: 'sold-out', stock };
    if (Number(ordersText || 0) > 0) return { outcome: 'duplicate', stock };
    await redis.multi().set(stockKey, String(stock - 1)).hIncrBy(ordersKey, user, 1).exec();
    return { outcome: 'sold', stock };
  } finally {
    if (owner) await unlock(owner);
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
      await redis.multi().set(stockKey, String(stock)).del(ordersKey).del(lockKey).exec();
      return reply(res, 200, {});
    }
    if (req.method === 'POST' && req.url === '/lockbench/buy') {
      const { user } = await body(req);
      return reply(res, 200, await buy(String(user)));
    }
    if (req.method === 'GET' && req.url === '/lockbench/state') {
      const [stock, orders] = await Promise.all([redis.get(stockKey), redis.hGetAll(ordersKey)]);
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
  server.listen(port, host, () => console.log(`listening on http://${host}:${port} (lock ${locked ? 'on' : 'off'})`));
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => { server.close(); redis.quit().finally(() => process.exit(0)); });
}
