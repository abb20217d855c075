package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
	"github.com/redis/go-redis/v9"
)

// The inventory as a team might lay it out: one Redis hash per product,
// its stock in the field "stock" and each user's orders in a field
// "order:USER". The correct sale reads the hash under WATCH and writes
// the new stock and the order in MULTI/EXEC, reading again when another
// buyer wrote first; the broken one reads and writes the same fields with
// nothing in between to guard them, a read-modify-write that loses
// updates when two buyers overlap.
const (
	stockField  = "stock"
	orderPrefix = "order:"
)

// product is the product's hash: the one item on sale, under the run's
// key prefix, which lockbench claims before the sale and clears after it.
func product(k workload.Keys) string { return k.Prefix + "product:1" }

// hashStore is the team's sale: guarded (WATCH/MULTI) or not.
type hashStore struct{ guarded bool }

// Needs implements workload.Sale: the inventory lives in Redis.
func (hashStore) Needs() servers.Needs { return servers.Needs{servers.KindRedis} }

// Guard implements workload.Sale: no lock, the store guards itself (or
// nothing does).
func (hashStore) Guard() workload.Guard { return workload.Guard{} }

// Inventory implements workload.Sale: the product's hash, reached through
// the run's own client.
func (hashStore) Inventory(env workload.Env) (workload.Inventory, error) {
	if env.Redis == nil {
		return nil, servers.ErrMissing
	}
	return &inventory{c: env.Redis, key: product(env.Keys)}, nil
}

// StartNode implements workload.Sale: a node sells through its own Redis
// client, which lockbench pauses, counts and routes through its faults.
func (s hashStore) StartNode(_ context.Context, n *workload.Node) (workload.Seller, error) {
	return &seller{guarded: s.guarded, n: n, key: product(n.Keys())}, nil
}

// inventory is the product's hash.
type inventory struct {
	c   *redis.Client
	key string
}

// Prepare sets the stock, with no order: the run has claimed its prefix.
func (v *inventory) Prepare(ctx context.Context, stock int64, _ bool) error {
	if err := v.c.HSet(ctx, v.key, stockField, stock).Err(); err != nil {
		return fmt.Errorf("%w: %v", servers.ErrUnreachable, err)
	}
	return nil
}

// Audit reads the hash: the stock left and every user's orders.
func (v *inventory) Audit(ctx context.Context) (history.Final, error) {
	fields, err := v.c.HGetAll(ctx, v.key).Result()
	if err != nil {
		return history.Final{}, err
	}
	stock, _ := strconv.ParseInt(fields[stockField], 10, 64)
	orders := map[string]int64{}
	for f, val := range fields {
		if user, ok := strings.CutPrefix(f, orderPrefix); ok {
			orders[user], _ = strconv.ParseInt(val, 10, 64)
		}
	}
	return sales.CountOrders(stock, orders), nil
}

// Clear implements workload.Inventory: the run clears its prefix itself.
func (v *inventory) Clear(context.Context) error { return nil }

// Ping implements workload.Inventory.
func (v *inventory) Ping(ctx context.Context) error { return v.c.Ping(ctx).Err() }

// seller is one node's side of the sale.
type seller struct {
	guarded bool
	n       *workload.Node
	key     string
}

// Close implements workload.Seller: the node's client is lockbench's.
func (s *seller) Close() error { return nil }

// Sell is one purchase, told to lockbench's recorder step by step.
func (s *seller) Sell(ctx context.Context, a *workload.Attempt) {
	if s.guarded {
		s.sellWatched(ctx, a.Rec(), a.User)
		return
	}
	s.sellUnguarded(ctx, a.Rec(), a.User)
}

// read reads the stock and the user's orders from the hash, through c
// (the node's client, or a transaction's).
func (s *seller) read(ctx context.Context, c redis.Cmdable, user string) (stock, orders int64, err error) {
	vals, err := c.HMGet(ctx, s.key, stockField, orderPrefix+user).Result()
	if err != nil {
		return 0, 0, err
	}
	num := func(v any) int64 {
		s, _ := v.(string) // a missing field is nil: zero
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	return num(vals[0]), num(vals[1]), nil
}

// errConflict is a watched transaction that another buyer's write beat:
// nothing was written, the sale reads again.
var errConflict = errors.New("ownstore: conflict")

// sellWatched is the correct sale: WATCH the hash, read it, check, then
// write stock-1 and the order in MULTI/EXEC, which Redis refuses when the
// hash changed since the read; a refused write changed nothing, and the
// buyer reads again after a short jittered pause.
func (s *seller) sellWatched(ctx context.Context, rec workload.Recorder, user string) {
	c := s.n.Redis()
	for try := 0; ; try++ {
		err := c.Watch(ctx, func(tx *redis.Tx) error {
			rec.Reading()
			stock, orders, err := s.read(ctx, tx, user)
			if err != nil {
				rec.ReadFailed()
				return nil
			}
			rec.Read(stock)
			switch {
			case stock <= 0:
				rec.SoldOut()
				return nil
			case orders > 0:
				rec.Duplicate()
				return nil
			}
			if !s.n.Business(ctx) {
				rec.Fail()
				return nil
			}
			rec.Writing()
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HIncrBy(ctx, s.key, stockField, -1)
				p.HIncrBy(ctx, s.key, orderPrefix+user, 1)
				return nil
			})
			switch {
			case errors.Is(err, redis.TxFailedErr):
				rec.Conflict()
				return errConflict
			case errors.Is(err, workload.ErrNotSent):
				rec.NotSent()
			case err != nil:
				rec.Unknown() // EXEC sent, no answer: it may have applied
			default:
				rec.Applied()
			}
			return nil
		}, s.key)
		if !errors.Is(err, errConflict) {
			if err != nil {
				// WATCH itself failed: nothing was read or written.
				rec.ReadFailed()
			}
			return
		}
		pause := time.Duration(1+rand.IntN(1<<min(try, 4))) * time.Millisecond
		select {
		case <-ctx.Done():
			rec.NotSent()
			return
		case <-time.After(pause):
		}
	}
}

// sellUnguarded is the broken sale: read, check, write read-1, with
// nothing between the read and the write. Two buyers who read the same
// stock both sell a unit, and the store keeps one decrement.
func (s *seller) sellUnguarded(ctx context.Context, rec workload.Recorder, user string) {
	c := s.n.Redis()
	rec.Reading()
	stock, orders, err := s.read(ctx, c, user)
	if err != nil {
		rec.ReadFailed()
		return
	}
	rec.Read(stock)
	switch {
	case stock <= 0:
		rec.SoldOut()
		return
	case orders > 0:
		rec.Duplicate()
		return
	}
	if !s.n.Business(ctx) {
		rec.Fail()
		return
	}
	rec.Writing()
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, s.key, stockField, stock-1)
		p.HIncrBy(ctx, s.key, orderPrefix+user, 1)
		return nil
	})
	switch {
	case errors.Is(err, workload.ErrNotSent):
		rec.NotSent()
	case err != nil:
		rec.Unknown()
	default:
		rec.Applied()
	}
}

// register adds the two sales to lockbench: from then on the command
// line, the matrix and harness.Run know them by name.
func register() error {
	for _, im := range []harness.Impl{
		{
			Info: locks.Info{
				Name:    "ownstore-correct",
				Summary: "a team's own inventory, a Redis hash per product: WATCH, read, MULTI/EXEC stock-1 and the order, read again on a conflict",
				Source:  "examples/ownstore",
			},
			Sale: hashStore{guarded: true},
		},
		{
			Info: locks.Info{
				Name:    "ownstore-broken",
				Summary: "the same hash, read and written with nothing in between: updates are lost when buyers overlap",
				Source:  "examples/ownstore",
			},
			Sale: hashStore{guarded: false},
		},
	} {
		if err := harness.Register(im); err != nil {
			return err
		}
	}
	return nil
}
