package workload

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/words"
	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

func script(name string) *redis.Script {
	src, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic("workload: missing script " + name) // a build defect
	}
	return redis.NewScript(string(src))
}

var (
	atomicScript = script("atomic_sale")
	fencedRead   = script("fenced_read")
	fencedWrite  = script("fenced_write")
	storeScripts = []*redis.Script{atomicScript, fencedRead, fencedWrite}
)

// keys are the Redis keys of one run, all under its prefix.
type keys struct {
	prefix string
	stock  string // the inventory counter: seed 003's inventory001
	lock   string
	fence  string // the store's highest fencing token seen
	orders string // hash: user id → number of orders
	// items are each item's keys; a sale of one item has one, these.
	items []keys
}

// newKeys returns the keys of a sale of n items. One item keeps the
// seeds' names; item i of several has inventory00(i+1), lock:i, fence:i
// and orders:i, so that the items share nothing.
func newKeys(prefix string, n int) keys {
	k := keys{
		prefix: prefix,
		stock:  prefix + "inventory001",
		lock:   prefix + "lock",
		fence:  prefix + "fence",
		orders: prefix + "orders",
	}
	if n <= 1 {
		k.items = []keys{k}
		return k
	}
	for i := range n {
		id := strconv.Itoa(i)
		k.items = append(k.items, keys{
			prefix: prefix,
			stock:  fmt.Sprintf("%sinventory%03d", prefix, i+1),
			lock:   prefix + "lock:" + id,
			fence:  prefix + "fence:" + id,
			orders: prefix + "orders:" + id,
		})
	}
	return k
}

// item returns item i's keys.
func (k *keys) item(i int) *keys { return &k.items[i] }

// locks returns every item's lock key.
func (k *keys) locks() []string {
	out := make([]string, len(k.items))
	for i := range k.items {
		out[i] = k.items[i].lock
	}
	return out
}

// Orders live in one hash, one field per user counting that user's
// orders: the audit can see a user who got two. (One key per user would
// also do, but the embedded server walks every key on each clock tick.)

// read is the sale's first step: GET the stock and the user's order count,
// two commands in one round trip. With a fencing token the store's fenced
// read is used instead.
func read(ctx context.Context, c *redis.Client, k *keys, user string, token uint64) (stock int64, orders int64, err error) {
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
// commands in one round trip (not a transaction, as in the seeds). With a
// fencing token the store refuses the write when a newer token has been
// seen; applied says whether it took.
func write(ctx context.Context, c *redis.Client, k *keys, user string, stock int64, token uint64) (applied bool, err error) {
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

// atomicSell is the whole sale in one server-side script (the atomic
// guard).
func atomicSell(ctx context.Context, c *redis.Client, k *keys, user string) (stock int64, sold, dup bool, err error) {
	vals, err := atomicScript.Run(ctx, c, []string{k.stock, k.orders}, user).Int64Slice()
	if err != nil {
		return 0, false, false, err
	}
	return vals[0], vals[1] == 1, vals[2] == 1, nil
}

// prepare checks that the prefix is free (unless force), clears it, loads
// the scripts and sets the stock.
func prepare(ctx context.Context, c *redis.Client, k *keys, stock int64, force bool, scripts []*redis.Script) error {
	n, err := countKeys(ctx, c, k.prefix)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	if n > 0 && !force {
		return fmt.Errorf("%w: %q holds %s; pass --force to delete them, or choose another --prefix", ErrPrefixInUse, k.prefix, words.Count(n, "key"))
	}
	if err := clearPrefix(ctx, c, k.prefix); err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	for _, s := range append(scripts, storeScripts...) {
		if err := s.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("%w: loading scripts: %v", ErrUnreachable, err)
		}
	}
	for i := range k.items {
		if err := c.Set(ctx, k.items[i].stock, stock, 0).Err(); err != nil {
			return fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
	}
	return nil
}

func scan(ctx context.Context, c *redis.Client, prefix string, each func([]string) error) error {
	var cursor uint64
	for {
		ks, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(ks) > 0 {
			if err := each(ks); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

func countKeys(ctx context.Context, c *redis.Client, prefix string) (int, error) {
	n := 0
	err := scan(ctx, c, prefix, func(ks []string) error { n += len(ks); return nil })
	return n, err
}

// clearPrefix deletes every key under prefix.
func clearPrefix(ctx context.Context, c *redis.Client, prefix string) error {
	return scan(ctx, c, prefix, func(ks []string) error { return c.Unlink(ctx, ks...).Err() })
}

// audit reads the store's final state: the stock, and every user's
// orders; of each item, and their sums, for a sale of several.
func audit(ctx context.Context, c *redis.Client, k *keys) (history.Final, error) {
	if len(k.items) == 1 {
		return auditItem(ctx, c, k)
	}
	var f history.Final
	for i := range k.items {
		it, err := auditItem(ctx, c, &k.items[i])
		if err != nil {
			return history.Final{}, err
		}
		f.Items = append(f.Items, it)
		f.Stock += it.Stock
		f.Orders += it.Orders
		f.DuplicateOrders += it.DuplicateOrders
		f.DuplicateUsers = append(f.DuplicateUsers, it.DuplicateUsers...)
	}
	slices.Sort(f.DuplicateUsers)
	f.DuplicateUsers = slices.Compact(f.DuplicateUsers)
	return f, nil
}

// auditItem reads one counter's final state and its orders.
func auditItem(ctx context.Context, c *redis.Client, k *keys) (history.Final, error) {
	var f history.Final
	var err error
	if f.Stock, err = parseNil(c.Get(ctx, k.stock)); err != nil {
		return f, err
	}
	all, err := c.HGetAll(ctx, k.orders).Result()
	if err != nil {
		return f, err
	}
	orders := make(map[string]int64, len(all))
	for user, v := range all {
		if orders[user], err = strconv.ParseInt(v, 10, 64); err != nil {
			return f, err
		}
	}
	countOrders(&f, orders)
	return f, nil
}

// countOrders adds to f the orders of each user, as a store lists them
// (user id → orders): the total, and the users with more than one.
func countOrders(f *history.Final, orders map[string]int64) {
	for user, n := range orders {
		f.Orders += n
		if n > 1 {
			f.DuplicateOrders += n - 1
			u, _ := strconv.ParseInt(user, 10, 32)
			f.DuplicateUsers = append(f.DuplicateUsers, int32(u))
		}
	}
	slices.Sort(f.DuplicateUsers)
}

// inventory is where a run keeps its stock and orders: Redis keys under
// the run's prefix, or MySQL tables. It is set up before the sale, audited
// after it, then removed.
type inventory interface {
	prepare(ctx context.Context, stock int64, force bool) error
	audit(ctx context.Context) (history.Final, error)
	clear(ctx context.Context) error
	// ping asks the server whether it answers.
	ping(ctx context.Context) error
}

// redisInventory keeps the inventory under the run's key prefix.
type redisInventory struct {
	c       *redis.Client
	k       *keys
	scripts []*redis.Script
}

func (v *redisInventory) prepare(ctx context.Context, stock int64, force bool) error {
	return prepare(ctx, v.c, v.k, stock, force, v.scripts)
}

func (v *redisInventory) audit(ctx context.Context) (history.Final, error) {
	return audit(ctx, v.c, v.k)
}

func (v *redisInventory) ping(ctx context.Context) error { return v.c.Ping(ctx).Err() }

func (v *redisInventory) clear(ctx context.Context) error {
	return clearPrefix(ctx, v.c, v.k.prefix)
}
