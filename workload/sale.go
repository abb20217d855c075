package workload

import (
	"context"
	"errors"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/redis/go-redis/v9"
)

// Needs are the servers a sale runs on, as a set.
type Needs uint8

// The servers a sale can need.
const (
	// NeedsRedis is a Redis that holds the inventory (and the lock, for a
	// lock that lives in Redis).
	NeedsRedis Needs = 1 << iota
	// NeedsRedisServers is several independent Redis servers for a lock
	// that runs on many (redlock); the first is the NeedsRedis one.
	NeedsRedisServers
	// NeedsZooKeeper is a ZooKeeper for a lock that lives there.
	NeedsZooKeeper
	// NeedsMySQL is a MySQL or MariaDB that holds the inventory and
	// guards the sale itself.
	NeedsMySQL
	// NeedsTarget is a running service under test (HTTPSale).
	NeedsTarget
	// NeedsReplica is a Redis with a replica, reached through Sentinel,
	// for a lock that waits for its replica (lua-wait).
	NeedsReplica
)

// Has reports whether every server of x is in n.
func (n Needs) Has(x Needs) bool { return n&x == x }

// Sale is an implementation's sale protocol, the one seam every kind of
// implementation plugs into: where its inventory lives and how that is
// prepared, audited and cleared (the inventory), how a node readies itself
// for it, and how one attempt buys, told to a recorder that owns the
// attempt's history. LockSale runs the seeds' read-modify-write under any
// locks.Locker; NoLock, Atomic and SQLSale are the sales without a lock.
type Sale interface {
	// Needs names the servers the sale runs on.
	Needs() Needs
	// describe fills the history header's account of the sale: whether
	// a lock guards it, whether its store checks fencing tokens.
	describe(h *history.Header)
	// inventory is the run's store on its servers.
	inventory(r *run) (inventory, error)
	// scripts are the Lua scripts to load on every Redis the sale uses.
	scripts() []*redis.Script
	// startNode readies node n for the sale (its lock, its SQL pool);
	// ctx bounds the set-up only.
	startNode(ctx context.Context, r *run, n *node) error
	// buy is one attempt of a buyer of node n with the given user id and
	// lock owner value.
	buy(ctx context.Context, r *run, n *node, rec *recorder, user, owner string)
}

// redisStore is the part of the sales whose inventory lives under the
// run's key prefix in Redis.
type redisStore struct{}

func (redisStore) inventory(r *run) (inventory, error) {
	if r.admin == nil {
		return nil, ErrNoRedis
	}
	return &redisInventory{c: r.admin, k: &r.keys, scripts: r.cfg.Sale.scripts()}, nil
}

func (redisStore) scripts() []*redis.Script { return nil }

func (redisStore) startNode(context.Context, *run, *node) error { return nil }

// NoLock is the sale with nothing guarding it: the seeds' GET, check, SET
// races between buyers.
func NoLock() Sale { return noLock{} }

type noLock struct{ redisStore }

func (noLock) Needs() Needs               { return NeedsRedis }
func (noLock) describe(h *history.Header) { h.Lockless = true }
func (noLock) buy(ctx context.Context, r *run, n *node, rec *recorder, user, owner string) {
	if len(rec.cart) > 1 {
		r.buyCart(ctx, n, rec.cart, user, owner, nil)
		return
	}
	r.sale(ctx, n, rec, user, 0)
}

// Atomic is the sale without a lock that checks the stock and decrements
// it in one Lua script on the server.
func Atomic() Sale { return atomicSale{} }

type atomicSale struct{ redisStore }

func (atomicSale) Needs() Needs               { return NeedsRedis }
func (atomicSale) describe(h *history.Header) { h.Lockless = true }

func (atomicSale) buy(ctx context.Context, r *run, n *node, rec *recorder, user, _ string) {
	rec.reading()
	stock, sold, dup, err := atomicSell(ctx, n.client, rec.k, user)
	if err != nil {
		if notSent(err) {
			rec.fail()
			return
		}
		// The script may have run: it read some stock and may have sold.
		// The checker treats such an operation as a blind, possible
		// decrement.
		rec.writingWithRead()
		rec.unknown()
		return
	}
	rec.read(stock)
	switch {
	case sold:
		rec.appliedWithRead()
	case dup:
		rec.duplicate()
	default:
		rec.soldOut()
	}
}

// LockSale is the seeds' sale under a lock: acquire, read the stock and
// the user's orders, check, write stock-1 and the order, release. The
// lock's Uses says which servers it needs besides the inventory's Redis;
// a lock whose leases carry fencing tokens (Fenced) sells through the
// fenced store, which refuses a stale token's read and write.
func LockSale(lock locks.Impl) Sale { return lockSale{lock: lock} }

type lockSale struct {
	redisStore
	lock locks.Impl
}

func (s lockSale) Needs() Needs {
	switch s.lock.Uses {
	case locks.UsesServers:
		return NeedsRedis | NeedsRedisServers
	case locks.UsesZooKeeper:
		return NeedsRedis | NeedsZooKeeper
	case locks.UsesReplica:
		return NeedsRedis | NeedsReplica
	}
	return NeedsRedis
}

func (s lockSale) describe(h *history.Header) { h.Fenced = s.lock.Fenced }

func (s lockSale) scripts() []*redis.Script { return s.lock.Scripts }

func (s lockSale) startNode(ctx context.Context, r *run, n *node) error {
	if s.lock.New == nil {
		return errors.New("workload: lock " + s.lock.Name + " has no New")
	}
	zk, err := r.zooKeeperEnv(n)
	if err != nil {
		return err
	}
	env := locks.Env{
		Node:      n.id,
		Redis:     n.client,
		Key:       r.keys.item(0).lock,
		TTL:       r.cfg.TTL,
		Now:       n.now,
		Probe:     r.prober(n),
		Servers:   lockServers(n.servers),
		ZooKeeper: zk,
	}
	// A lock that takes several keys together gets them all; any other
	// is made once per item, on the item's key.
	if s.lock.Multi && len(r.keys.items) > 1 {
		env.Keys = r.keys.locks()
	}
	for i := range r.keys.items {
		env.Key = r.keys.item(i).lock
		l, err := s.lock.New(ctx, env)
		if err != nil {
			return err
		}
		n.lockers = append(n.lockers, l)
		if env.Keys != nil {
			break
		}
	}
	return nil
}

func (s lockSale) buy(ctx context.Context, r *run, n *node, rec *recorder, user, owner string) {
	if m, ok := n.lockers[0].(locks.MultiLocker); ok && len(r.keys.items) > 1 {
		r.buyCart(ctx, n, rec.cart, user, owner, m)
		return
	}
	locker := n.lockers[rec.item]
	rec.acquiring()
	lease, err := locker.Acquire(ctx, owner)
	if err != nil {
		if errors.Is(err, locks.ErrNotObtained) {
			rec.gaveUp()
			return
		}
		rec.fail()
		return
	}
	rec.acquired(lease.Token())
	nested := make([]locks.Lease, 0, r.cfg.Reentry)
	for i := 0; i < r.cfg.Reentry; i++ {
		l, err := locker.Acquire(ctx, owner)
		if err != nil {
			rec.fail()
			r.release(ctx, n, rec, nested, lease)
			return
		}
		nested = append(nested, l)
	}
	if err := r.probe(ctx, n, locks.Acquired); err != nil {
		rec.fail()
		r.release(ctx, n, rec, nested, lease)
		return
	}
	r.sale(ctx, n, rec, user, lease.Token())
	if err := r.probe(ctx, n, locks.BeforeRelease); err != nil {
		rec.stopped()
	}
	r.release(ctx, n, rec, nested, lease)
}

// release gives the lock up, innermost level first, unless the buyer is
// dead: a crashed holder never unlocks.
func (r *run) release(ctx context.Context, n *node, rec *recorder, nested []locks.Lease, lease locks.Lease) {
	if errors.Is(context.Cause(ctx), ErrCrashed) {
		rec.crashed()
		return
	}
	for i := len(nested) - 1; i >= 0; i-- {
		nested[i].Release(ctx)
	}
	rec.releasing()
	if err := lease.Release(ctx); err == nil {
		rec.released(false)
	} else if errors.Is(err, locks.ErrNotHeld) {
		rec.released(true)
	}
	r.probe(ctx, n, locks.Released)
}

// sale is the seeds' read-modify-write: read the stock (and the user's
// orders), check, write stock-1 and the order. A fencing token above zero
// sends both through the fenced store.
func (r *run) sale(ctx context.Context, n *node, rec *recorder, user string, token uint64) {
	rec.reading()
	stock, orders, err := read(ctx, n.client, rec.k, user, token)
	if err != nil {
		rec.readFailed()
		return
	}
	rec.read(stock)
	switch {
	case stock <= 0:
		rec.soldOut()
		return
	case orders > 0:
		rec.duplicate()
		return
	}
	if !r.business(ctx, n) {
		rec.fail()
		return
	}
	rec.writing()
	applied, err := write(ctx, n.client, rec.k, user, stock-1, token)
	switch {
	case err != nil && notSent(err):
		rec.notSent()
	case err != nil:
		rec.unknown()
	case applied:
		rec.applied()
	default:
		rec.refused()
	}
}
