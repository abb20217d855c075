package sales

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

func script(name string) *redis.Script {
	src, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic("sales: missing script " + name) // a build defect
	}
	return redis.NewScript(string(src))
}

var (
	atomicScript = script("atomic_sale")
	fencedRead   = script("fenced_read")
	fencedWrite  = script("fenced_write")
	storeScripts = []*redis.Script{atomicScript, fencedRead, fencedWrite}
)

// itemKeys are one item's keys of the Redis inventory, under the run's
// prefix.
type itemKeys struct {
	stock  string // the inventory counter: source 003's inventory001
	fence  string // the store's highest fencing token seen
	orders string // hash: user id → number of orders
}

// storeKeys returns each item's keys of a run's Redis inventory. One item
// keeps the sources' names; item i of several has inventory00(i+1), fence:i
// and orders:i, so that the items share nothing.
func storeKeys(k workload.Keys) []itemKeys {
	p := k.Prefix
	if k.Items() <= 1 {
		return []itemKeys{{stock: p + "inventory001", fence: p + "fence", orders: p + "orders"}}
	}
	out := make([]itemKeys, k.Items())
	for i := range out {
		id := strconv.Itoa(i)
		out[i] = itemKeys{stock: fmt.Sprintf("%sinventory%03d", p, i+1), fence: p + "fence:" + id, orders: p + "orders:" + id}
	}
	return out
}

// Orders live in one hash, one field per user counting that user's
// orders: the audit can see a user who got two. (One key per user would
// also do, but the embedded server walks every key on each clock tick.)

// read is the sale's first step: GET the stock and the user's order count,
// two commands in one round trip. With a fencing token the store's fenced
// read is used instead.
func read(ctx context.Context, c *redis.Client, k itemKeys, user string, token uint64) (stock int64, orders int64, err error) {
	if token > 0 {
		vals, err := fencedRead.Run(ctx, c, []string{k.stock, k.orders, k.fence}, token, user).Int64Slice()
		if err != nil {
			return 0, 0, err
		}
		return vals[0], vals[1], nil
	}
	var get *redis.StringCmd
	var hget *redis.StringCmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, k.stock)
		hget = p.HGet(ctx, k.orders, user)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, err
	}
	if stock, err = parseNil(get); err != nil {
		return 0, 0, err
	}
	orders, err = parseNil(hget)
	return stock, orders, err
}

// parseNil reads an integer reply, a missing key or field being zero.
func parseNil(c *redis.StringCmd) (int64, error) {
	v, err := c.Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return v, err
}

// write is the sale's second step: SET stock-1 and record the order, two
// commands in one round trip (not a transaction, as in the sources). With a
// fencing token the store refuses the write when a newer token has been
// seen; applied says whether it took.
func write(ctx context.Context, c *redis.Client, k itemKeys, user string, stock int64, token uint64) (applied bool, err error) {
	if token > 0 {
		n, err := fencedWrite.Run(ctx, c, []string{k.stock, k.orders, k.fence}, token, stock, user).Int64()
		return n == 1, err
	}
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k.stock, stock, 0)
		p.HIncrBy(ctx, k.orders, user, 1)
		return nil
	})
	return err == nil, err
}

// atomicResult reads the atomic script's answer (the whole sale in one
// server-side script, the atomic guard): the stock it read, whether it
// sold, whether the user already had an order.
func atomicResult(vals []int64, err error) (stock int64, sold, dup bool, _ error) {
	if err != nil {
		return 0, false, false, err
	}
	if len(vals) != 3 {
		return 0, false, false, fmt.Errorf("sales: the atomic script answered %d values, want 3", len(vals))
	}
	return vals[0], vals[1] == 1, vals[2] == 1, nil
}

// redisInventory keeps the inventory under the run's key prefix, which
// the run claims and clears (workload.Keys): a counter and an orders
// hash per item.
type redisInventory struct {
	c     *redis.Client
	items []itemKeys
}

// redisStore is the part of the sales whose inventory lives under the
// run's key prefix in Redis.
type redisStore struct{}

// Inventory implements workload.Sale.
func (redisStore) Inventory(env workload.Env) (workload.Inventory, error) {
	if env.Redis == nil {
		return nil, servers.ErrMissing
	}
	return &redisInventory{c: env.Redis, items: storeKeys(env.Keys)}, nil
}

// Prepare loads the store's scripts and sets every item's stock; the run
// has claimed the prefix.
func (v *redisInventory) Prepare(ctx context.Context, stock int64, _ bool) error {
	for _, s := range storeScripts {
		if err := s.Load(ctx, v.c).Err(); err != nil {
			return fmt.Errorf("%w: loading scripts: %v", servers.ErrUnreachable, err)
		}
	}
	for _, k := range v.items {
		if err := v.c.Set(ctx, k.stock, stock, 0).Err(); err != nil {
			return fmt.Errorf("%w: %v", servers.ErrUnreachable, err)
		}
	}
	return nil
}

// Audit reads the store's final state: the stock, and every user's
// orders; of each item, and their sums, for a sale of several.
func (v *redisInventory) Audit(ctx context.Context) (history.Final, error) {
	if len(v.items) == 1 {
		return auditItem(ctx, v.c, v.items[0])
	}
	var items []history.Final
	for _, k := range v.items {
		it, err := auditItem(ctx, v.c, k)
		if err != nil {
			return history.Final{}, err
		}
		items = append(items, it)
	}
	return SumItems(items), nil
}

// SumItems is the final state of a sale of several items, each item's
// given: the stock, orders and duplicate orders summed, the users with
// more than one order of any item, sorted, each once, and the items kept.
func SumItems(items []history.Final) history.Final {
	var f history.Final
	for _, it := range items {
		f.Items = append(f.Items, it)
		f.Stock += it.Stock
		f.Orders += it.Orders
		f.DuplicateOrders += it.DuplicateOrders
		f.DuplicateUsers = append(f.DuplicateUsers, it.DuplicateUsers...)
	}
	slices.Sort(f.DuplicateUsers)
	f.DuplicateUsers = slices.Compact(f.DuplicateUsers)
	return f
}

// Ping implements workload.Inventory.
func (v *redisInventory) Ping(ctx context.Context) error { return v.c.Ping(ctx).Err() }

// Clear implements workload.Inventory: the run clears its prefix itself.
func (v *redisInventory) Clear(context.Context) error { return nil }

// auditItem reads one counter's final state and its orders, both in one
// MULTI/EXEC: a write whose buyer gave up on it (an unknown outcome, such
// as one a paused server held back) may still land as the audit reads,
// and read apart the stock could miss a sale whose order is counted, an
// oversell that never happened.
func auditItem(ctx context.Context, c *redis.Client, k itemKeys) (history.Final, error) {
	var f history.Final
	var stock *redis.StringCmd
	var hash *redis.MapStringStringCmd
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		stock = p.Get(ctx, k.stock)
		hash = p.HGetAll(ctx, k.orders)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return f, err
	}
	var err error
	if f.Stock, err = parseNil(stock); err != nil {
		return f, err
	}
	all, err := hash.Result()
	if err != nil {
		return f, err
	}
	orders := make(map[string]int64, len(all))
	for user, v := range all {
		if orders[user], err = strconv.ParseInt(v, 10, 64); err != nil {
			return f, err
		}
	}
	return CountOrders(f.Stock, orders), nil
}

// CountOrders is the final state of a store that holds stock and lists
// each user's orders (user id → orders): the total, and the users with
// more than one, sorted.
func CountOrders(stock int64, orders map[string]int64) history.Final {
	f := history.Final{Stock: stock}
	for user, n := range orders {
		f.Orders += n
		if n > 1 {
			f.DuplicateOrders += n - 1
			u, _ := strconv.ParseInt(user, 10, 32)
			f.DuplicateUsers = append(f.DuplicateUsers, int32(u))
		}
	}
	slices.Sort(f.DuplicateUsers)
	return f
}
