package sales

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
	"github.com/redis/go-redis/v9"
)

// NoLock is the sale with nothing guarding it: the sources' GET, check, SET
// races between buyers.
func NoLock() workload.Sale { return noLock{} }

type noLock struct{ redisStore }

func (noLock) Needs() servers.Needs             { return servers.Needs{servers.KindRedis} }
func (noLock) Guard() workload.Guard            { return workload.Guard{} }
func (noLock) Supports(workload.Workload) error { return nil }
func (noLock) StartNode(_ context.Context, n *workload.Node) (workload.Seller, error) {
	return &redisSeller{n: n, items: storeKeys(n.Keys())}, nil
}

// Atomic is the sale without a lock that checks the stock and decrements
// it in one Lua script on the server.
func Atomic() workload.Sale { return atomicSale{} }

type atomicSale struct{ redisStore }

func (atomicSale) Needs() servers.Needs  { return servers.Needs{servers.KindRedis} }
func (atomicSale) Guard() workload.Guard { return workload.Guard{} }

func (atomicSale) Supports(w workload.Workload) error {
	if w.Cart > 1 {
		return fmt.Errorf("%w: atomic sells one item per script; a cart of several needs multi, or none", workload.ErrWorkload)
	}
	return nil
}

// Pipelines implements workload.Pipeliner: an attempt is one script.
func (atomicSale) Pipelines() {}

func (atomicSale) StartNode(_ context.Context, n *workload.Node) (workload.Seller, error) {
	s := atomicSeller{redisSeller: &redisSeller{n: n, items: storeKeys(n.Keys())}}
	if size := n.Workload().Pipeline; size > 0 {
		s.pipe = newPipeline(n.Redis(), size).start(n.Go)
	}
	return s, nil
}

// atomicSeller sells with the atomic script, each call on its own or
// through the node's pipeline.
type atomicSeller struct {
	*redisSeller
	pipe *pipeline // nil: each call its own round trip
}

// Close implements workload.Seller: the pipeline stops.
func (s atomicSeller) Close() error {
	if s.pipe != nil {
		s.pipe.close()
	}
	return nil
}

func (s atomicSeller) Sell(ctx context.Context, a *workload.Attempt) {
	rec := a.Rec()
	rec.Reading()
	k := s.items[a.Items[0]]
	var vals []int64
	var err error
	if s.pipe != nil {
		vals, err = s.pipe.call(ctx, k, a.User)
	} else {
		vals, err = atomicScript.Run(ctx, s.n.Redis(), []string{k.stock, k.orders}, a.User).Int64Slice()
	}
	stock, sold, dup, err := atomicResult(vals, err)
	if err != nil {
		if errors.Is(err, workload.ErrNotSent) {
			rec.Fail()
			return
		}
		// The script may have run: it read some stock and may have sold.
		// The checker treats such an operation as a blind, possible
		// decrement.
		rec.WritingWithRead()
		rec.Unknown()
		return
	}
	rec.Read(stock)
	switch {
	case sold:
		rec.AppliedWithRead()
	case dup:
		rec.Duplicate()
	default:
		rec.SoldOut()
	}
}

// LockSale is the sources' sale under a lock: acquire, read the stock and
// the user's orders, check, write stock-1 and the order, release. The
// lock's Uses says which servers it needs besides the inventory's Redis;
// a lock whose leases carry fencing tokens (Fenced) sells through the
// fenced store, which refuses a stale token's read and write.
func LockSale(lock locks.Impl) workload.Sale { return lockSale{lock: lock} }

type lockSale struct {
	redisStore
	lock locks.Impl
}

func (s lockSale) Needs() servers.Needs {
	if s.lock.Uses == locks.UsesRedis {
		return servers.Needs{servers.KindRedis}
	}
	return servers.Needs{servers.KindRedis, servers.Kind(s.lock.Uses)}
}

func (s lockSale) Guard() workload.Guard {
	return workload.Guard{Lock: true, Fenced: s.lock.Fenced, Promises: s.lock.Promises.History(s.lock.Fenced)}
}

// Scripts implements workload.Scripted: the lock's.
func (s lockSale) Scripts() []*redis.Script { return s.lock.Scripts }

func (s lockSale) Supports(w workload.Workload) error {
	if w.Cart > 1 && !s.lock.Multi {
		return fmt.Errorf("%w: %s locks one item at a time; a cart of several needs multi (all or none), or none", workload.ErrWorkload, s.lock.Name)
	}
	return nil
}

// StartNode makes the node's handles on the lock: one per item, on the
// item's key, or one for every item of a lock that takes several
// together.
func (s lockSale) StartNode(ctx context.Context, n *workload.Node) (workload.Seller, error) {
	if s.lock.New == nil {
		return nil, errors.New("sales: lock " + s.lock.Name + " has no New")
	}
	env, err := n.LockEnv(s.lock.Uses)
	if err != nil {
		return nil, err
	}
	keys := n.Keys()
	if s.lock.Multi && keys.Items() > 1 {
		env.Keys = keys.Locks
	}
	seller := &lockSeller{redisSeller: redisSeller{n: n, items: storeKeys(keys)}, locks: keys.Locks, fenced: s.lock.Fenced}
	for _, key := range keys.Locks {
		env.Key = key
		l, err := s.lock.New(ctx, env)
		if err != nil {
			seller.Close()
			return nil, err
		}
		seller.lockers = append(seller.lockers, l)
		if env.Keys != nil {
			break
		}
	}
	return seller, nil
}

// lockSeller is a node's side of a sale under a lock: its handles on
// each item's lock (one for a sale of one item, or for a lock that takes
// several together).
type lockSeller struct {
	redisSeller
	lockers []locks.Locker
	locks   []string // each item's lock key
	// fenced: the store checks the leases' tokens. An unfenced lock's
	// token is recorded, never sent to the store.
	fenced bool
}

// Close closes the lock handles that hold something open (a watchdog, a
// subscription, a session).
func (s *lockSeller) Close() error {
	var errs []error
	for _, l := range s.lockers {
		if c, ok := l.(locks.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

func (s *lockSeller) Sell(ctx context.Context, a *workload.Attempt) {
	ctx = locks.WithTrace(ctx, a.Trace())
	if m, ok := s.lockers[0].(locks.MultiLocker); ok && len(s.items) > 1 {
		s.buyCart(ctx, a, m)
		return
	}
	locker := s.lockers[a.Items[0]]
	underLock(ctx, s.n, a, func() (locks.Lease, error) { return locker.Acquire(ctx, a.Owner) }, func(lease locks.Lease) {
		var token uint64
		if s.fenced {
			token = lease.Token()
		}
		s.sale(ctx, a.Rec(), s.items[a.Items[0]], a.User, token)
	})
}

// underLock is one attempt under a lock, each step recorded for every
// item of a's cart (one lease holds them all): acquire, and acquire
// again Workload.Reentry times; the Acquired probe; sell, with the lease;
// the BeforeRelease probe; release. A buyer that gave up or failed to
// acquire stops there.
func underLock(ctx context.Context, n *workload.Node, a *workload.Attempt, acquire func() (locks.Lease, error), sell func(lease locks.Lease)) {
	a.Each(workload.Recorder.Acquiring)
	lease, err := acquire()
	if err != nil {
		if errors.Is(err, locks.ErrNotObtained) {
			a.Each(workload.Recorder.GaveUp)
		} else {
			a.Each(workload.Recorder.Fail)
		}
		return
	}
	a.Each(func(rec workload.Recorder) { rec.Acquired(lease.Token()) })
	reentry := n.Workload().Reentry
	nested := make([]locks.Lease, 0, reentry)
	for range reentry {
		l, err := acquire()
		if err != nil {
			a.Each(workload.Recorder.Fail)
			release(ctx, n, a, nested, lease)
			return
		}
		nested = append(nested, l)
	}
	if err := n.Probe(ctx, locks.Acquired); err != nil {
		a.Each(workload.Recorder.Fail)
		release(ctx, n, a, nested, lease)
		return
	}
	sell(lease)
	if err := n.Probe(ctx, locks.BeforeRelease); err != nil {
		a.Each(workload.Recorder.Stopped)
	}
	release(ctx, n, a, nested, lease)
}

// release gives the lock up, innermost level first, unless the buyer is
// dead: a crashed holder never unlocks. It tells every item of a's cart:
// one lease holds them all.
func release(ctx context.Context, n *workload.Node, a *workload.Attempt, nested []locks.Lease, lease locks.Lease) {
	if errors.Is(context.Cause(ctx), workload.ErrCrashed) {
		a.Each(workload.Recorder.Crashed)
		return
	}
	for i := len(nested) - 1; i >= 0; i-- {
		nested[i].Release(ctx)
	}
	a.Each(workload.Recorder.Releasing)
	switch err := lease.Release(ctx); {
	case err == nil:
		a.Each(func(rec workload.Recorder) { rec.Released(false) })
	case errors.Is(err, locks.ErrNotHeld):
		a.Each(func(rec workload.Recorder) { rec.Released(true) })
	}
	n.Probe(ctx, locks.Released)
}

// redisSeller is a node's side of a sale whose inventory is the Redis
// one: the node and the items' keys.
type redisSeller struct {
	n     *workload.Node
	items []itemKeys
}

// Close implements workload.Seller: the node's Redis client is the
// engine's to close.
func (s *redisSeller) Close() error { return nil }

// Sell is the sale with nothing guarding it (NoLock): the sources'
// read-modify-write of one item, or of every item of a cart at once.
func (s *redisSeller) Sell(ctx context.Context, a *workload.Attempt) {
	if len(a.Cart) > 1 {
		s.cartSale(ctx, a)
		return
	}
	s.sale(ctx, a.Rec(), s.items[a.Items[0]], a.User, 0)
}

// sale is the sources' read-modify-write: read the stock (and the user's
// orders), check, write stock-1 and the order. A fencing token above zero
// sends both through the fenced store.
func (s *redisSeller) sale(ctx context.Context, rec workload.Recorder, k itemKeys, user string, token uint64) {
	c := s.n.Redis()
	rec.Reading()
	stock, orders, err := read(ctx, c, k, user, token)
	if err != nil {
		rec.ReadFailed()
		return
	}
	if !checked(ctx, s.n, rec, stock, orders > 0) {
		return
	}
	rec.Writing()
	applied, err := write(ctx, c, k, user, stock-1, token)
	switch {
	case err != nil && errors.Is(err, workload.ErrNotSent):
		rec.NotSent()
	case err != nil:
		rec.Unknown()
	case applied:
		rec.Applied()
	default:
		rec.Refused()
	}
}

// checked records the stock a buyer read and whether its sale goes on:
// not when sold out, not for a buyer with an order already (ordered),
// not when its business step was cut short.
func checked(ctx context.Context, n *workload.Node, rec workload.Recorder, stock int64, ordered bool) bool {
	rec.Read(stock)
	switch {
	case stock <= 0:
		rec.SoldOut()
		return false
	case ordered:
		rec.Duplicate()
		return false
	}
	if !n.Business(ctx) {
		rec.Fail()
		return false
	}
	return true
}
