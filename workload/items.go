package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/lockbench/lockbench/locks"
	"github.com/redis/go-redis/v9"
)

// A sale of several items (Workload.Items) keeps a counter, orders and a
// lock key per item. Each buyer's items are drawn from the seed: one item,
// or with Cart a cart of 1 to Cart distinct items, sorted, bought all or
// none; with Reads a share of the buyers only read one item's stock (the
// product page). A cart is one history Op per item, sharing the client
// and the attempt.

// ErrWorkload means the workload asks what the sale cannot do: several
// items or readers of a sale whose stock is not in lockbench's Redis, a
// cart of several items under a lock that takes one at a time.
var ErrWorkload = errors.New("workload: not for this sale")

// Supports says whether s can run w's items, carts and readers.
func Supports(s Sale, w Workload) error {
	items := max(1, w.Items)
	switch {
	case w.Reads < 0 || w.Reads > 100:
		return fmt.Errorf("%w: reads is a percentage, got %d", ErrWorkload, w.Reads)
	case w.Cart > items:
		return fmt.Errorf("%w: a cart of up to %d items from %d", ErrWorkload, w.Cart, items)
	}
	several := items > 1 || w.Reads > 0 || w.Cart > 1
	switch s := s.(type) {
	case noLock:
		return nil
	case atomicSale:
		if w.Cart > 1 {
			return fmt.Errorf("%w: atomic sells one item per script; a cart of several needs multi, or none", ErrWorkload)
		}
		return nil
	case lockSale:
		if w.Cart > 1 && !s.lock.Multi {
			return fmt.Errorf("%w: %s locks one item at a time; a cart of several needs multi (all or none), or none", ErrWorkload, s.lock.Name)
		}
		return nil
	}
	if several {
		return fmt.Errorf("%w: several items, carts and readers need a sale whose stock is lockbench's Redis (a lock, none or atomic)", ErrWorkload)
	}
	return nil
}

// cartOf draws client c's items, sorted, and whether it only reads.
func (r *run) cartOf(c int32) (items []int, reader bool) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(c)))
	reader = r.cfg.Reads > 0 && rng.IntN(100) < r.cfg.Reads
	k := len(r.keys.items)
	if k == 1 {
		return []int{0}, reader
	}
	size := 1
	if !reader && r.cart > 1 {
		size = 1 + rng.IntN(r.cart)
	}
	items = rng.Perm(k)[:size]
	slices.Sort(items)
	return items, reader
}

// view is a reader's attempt: the item's stock, read under the item's read
// lock when the lock has one (rw), else read alone (one GET is atomic).
// The page is shown (the Business probe, where a fault may strike a
// holder) before the read lock is released.
func (r *run) view(ctx context.Context, n *node, rec *recorder, owner string) {
	var lease locks.Lease
	if rl, ok := r.readLocker(n, rec.item); ok {
		rec.acquiring()
		rec.op.Shared = true
		l, err := rl.AcquireRead(ctx, owner)
		if err != nil {
			rec.viewFailed()
			return
		}
		rec.acquired(0)
		lease = l
		if err := r.probe(ctx, n, locks.Acquired); err != nil {
			rec.viewFailed()
			r.release(ctx, n, rec, nil, lease)
			return
		}
	}
	rec.reading()
	stock, err := parseNil(n.client.Get(ctx, rec.k.stock))
	if err != nil {
		rec.viewFailed()
	} else {
		rec.read(stock)
		rec.viewed()
	}
	if lease == nil {
		return
	}
	if err := r.probe(ctx, n, locks.Business); err != nil {
		rec.stopped()
	}
	r.release(ctx, n, rec, nil, lease)
}

// readLocker returns the node's read lock of item i, if its lock has one.
func (r *run) readLocker(n *node, i int) (locks.ReadLocker, bool) {
	if len(n.lockers) == 0 {
		return nil, false
	}
	l := n.lockers[min(i, len(n.lockers)-1)]
	rl, ok := l.(locks.ReadLocker)
	return rl, ok
}

// buyCart is a buyer's attempt at every item of c at once: the items'
// locks taken together by m (none when m is nil), every stock and order
// read in one round trip, and, when each item has stock and none is the
// buyer's already, every item's stock-1 and order written in one round
// trip; otherwise nothing is written (all or none).
func (r *run) buyCart(ctx context.Context, n *node, c cart, user, owner string, m locks.MultiLocker) {
	if m == nil {
		r.cartSale(ctx, n, c, user)
		return
	}
	keys := make([]string, len(c))
	for j, rec := range c {
		keys[j] = rec.k.lock
	}
	c.each((*recorder).acquiring)
	lease, err := m.AcquireAll(ctx, owner, keys)
	if err != nil {
		if errors.Is(err, locks.ErrNotObtained) {
			c.each((*recorder).gaveUp)
		} else {
			c.each((*recorder).fail)
		}
		return
	}
	c.each(func(rec *recorder) { rec.acquired(lease.Token()) })
	nested := make([]locks.Lease, 0, r.cfg.Reentry)
	for i := 0; i < r.cfg.Reentry; i++ {
		l, err := m.AcquireAll(ctx, owner, keys)
		if err != nil {
			c.each((*recorder).fail)
			r.releaseCart(ctx, n, c, nested, lease)
			return
		}
		nested = append(nested, l)
	}
	if err := r.probe(ctx, n, locks.Acquired); err != nil {
		c.each((*recorder).fail)
		r.releaseCart(ctx, n, c, nested, lease)
		return
	}
	r.cartSale(ctx, n, c, user)
	if err := r.probe(ctx, n, locks.BeforeRelease); err != nil {
		c.each((*recorder).stopped)
	}
	r.releaseCart(ctx, n, c, nested, lease)
}

// releaseCart is release for every item of a cart: one lease for all.
func (r *run) releaseCart(ctx context.Context, n *node, c cart, nested []locks.Lease, lease locks.Lease) {
	if errors.Is(context.Cause(ctx), ErrCrashed) {
		c.each((*recorder).crashed)
		return
	}
	for i := len(nested) - 1; i >= 0; i-- {
		nested[i].Release(ctx)
	}
	c.each((*recorder).releasing)
	switch err := lease.Release(ctx); {
	case err == nil:
		c.each(func(rec *recorder) { rec.released(false) })
	case errors.Is(err, locks.ErrNotHeld):
		c.each(func(rec *recorder) { rec.released(true) })
	}
	r.probe(ctx, n, locks.Released)
}

// cartSale is the seeds' read-modify-write over every item of a cart.
func (r *run) cartSale(ctx context.Context, n *node, c cart, user string) {
	c.each((*recorder).reading)
	gets := make([]*redis.StringCmd, len(c))
	hgets := make([]*redis.StringCmd, len(c))
	if _, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, rec := range c {
			gets[j] = p.Get(ctx, rec.k.stock)
			hgets[j] = p.HGet(ctx, rec.k.orders, user)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		c.each((*recorder).readFailed)
		return
	}
	stocks := make([]int64, len(c))
	refuse := false
	for j := range c {
		stock, err := parseNil(gets[j])
		orders, err2 := parseNil(hgets[j])
		if err != nil || err2 != nil {
			c.each((*recorder).readFailed)
			return
		}
		stocks[j] = stock
		c[j].read(stock)
		refuse = refuse || stock <= 0 || orders > 0
		if orders > 0 {
			stocks[j] = -1 // marks the buyer's own order below
		}
	}
	if refuse {
		for j, rec := range c {
			switch {
			case rec.op.Stock <= 0:
				rec.soldOut()
			case stocks[j] < 0:
				rec.duplicate()
			default:
				rec.cartRefused()
			}
		}
		return
	}
	if !r.business(ctx, n) {
		c.each((*recorder).fail)
		return
	}
	c.each((*recorder).writing)
	_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, rec := range c {
			p.Set(ctx, rec.k.stock, stocks[j]-1, 0)
			p.HIncrBy(ctx, rec.k.orders, user, 1)
		}
		return nil
	})
	switch {
	case err != nil && notSent(err):
		c.each((*recorder).notSent)
	case err != nil:
		c.each((*recorder).unknown)
	default:
		c.each((*recorder).applied)
	}
}
