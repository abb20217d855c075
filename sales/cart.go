package sales

import (
	"context"
	"errors"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
	"github.com/redis/go-redis/v9"
)

// A sale of several items (workload.Workload.Items) keeps a counter,
// orders and a lock key per item. A cart is bought all or none: every
// item's stock and order read in one round trip, and, when each item has
// stock and none is the buyer's already, every item's stock-1 and order
// written in one round trip. A reader only reads one item's stock (the
// product page).

// View is a reader's attempt on a sale without a lock: the item's stock,
// read alone (one GET is atomic).
func (s *redisSeller) View(ctx context.Context, a *workload.Attempt) {
	s.view(ctx, a.Rec(), s.items[a.Items[0]])
}

// view reads an item's stock for a reader and shows it.
func (s *redisSeller) view(ctx context.Context, rec workload.Recorder, k itemKeys) {
	rec.Reading()
	stock, err := parseNil(s.n.Redis().Get(ctx, k.stock))
	if err != nil {
		rec.ViewFailed()
		return
	}
	rec.Read(stock)
	rec.Viewed()
}

// View is a reader's attempt under a lock: the item's stock, read under
// the item's read lock when the lock has one (rw), else read alone. The
// page is shown (the Business probe, where a fault may strike a holder)
// before the read lock is released.
func (s *lockSeller) View(ctx context.Context, a *workload.Attempt) {
	rec, k := a.Rec(), s.items[a.Items[0]]
	ctx = locks.WithTrace(ctx, a.Trace())
	rl, ok := s.lockers[min(a.Items[0], len(s.lockers)-1)].(locks.ReadLocker)
	if !ok {
		s.view(ctx, rec, k)
		return
	}
	rec.AcquiringShared()
	lease, err := rl.AcquireRead(ctx, a.Owner)
	if err != nil {
		rec.ViewFailed()
		return
	}
	rec.Acquired(0)
	if err := s.n.Probe(ctx, locks.Acquired); err != nil {
		rec.ViewFailed()
		release(ctx, s.n, a, nil, lease)
		return
	}
	s.view(ctx, rec, k)
	if err := s.n.Probe(ctx, locks.Business); err != nil {
		rec.Stopped()
	}
	release(ctx, s.n, a, nil, lease)
}

// buyCart is a buyer's attempt at every item of its cart at once, the
// items' locks taken together by m.
func (s *lockSeller) buyCart(ctx context.Context, a *workload.Attempt, m locks.MultiLocker) {
	keys := make([]string, len(a.Items))
	for j, i := range a.Items {
		keys[j] = s.locks[i]
	}
	underLock(ctx, s.n, a, func() (locks.Lease, error) { return m.AcquireAll(ctx, a.Owner, keys) }, func(locks.Lease) {
		s.cartSale(ctx, a)
	})
}

// cartSale is the sources' read-modify-write over every item of a cart.
func (s *redisSeller) cartSale(ctx context.Context, a *workload.Attempt) {
	c := s.n.Redis()
	a.Each(workload.Recorder.Reading)
	gets := make([]*redis.StringCmd, len(a.Items))
	hgets := make([]*redis.StringCmd, len(a.Items))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, i := range a.Items {
			gets[j] = p.Get(ctx, s.items[i].stock)
			hgets[j] = p.HGet(ctx, s.items[i].orders, a.User)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		a.Each(workload.Recorder.ReadFailed)
		return
	}
	stocks := make([]int64, len(a.Items))
	mine := make([]bool, len(a.Items)) // the item is the buyer's already
	refuse := false
	for j := range a.Items {
		stock, err := parseNil(gets[j])
		orders, err2 := parseNil(hgets[j])
		if err != nil || err2 != nil {
			a.Each(workload.Recorder.ReadFailed)
			return
		}
		stocks[j], mine[j] = stock, orders > 0
		a.Cart[j].Read(stock)
		refuse = refuse || stock <= 0 || orders > 0
	}
	if refuse {
		for j, rec := range a.Cart {
			switch {
			case stocks[j] <= 0:
				rec.SoldOut()
			case mine[j]:
				rec.Duplicate()
			default:
				rec.CartRefused()
			}
		}
		return
	}
	if !s.n.Business(ctx) {
		a.Each(workload.Recorder.Fail)
		return
	}
	a.Each(workload.Recorder.Writing)
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, i := range a.Items {
			p.Set(ctx, s.items[i].stock, stocks[j]-1, 0)
			p.HIncrBy(ctx, s.items[i].orders, a.User, 1)
		}
		return nil
	})
	switch {
	case err != nil && errors.Is(err, workload.ErrNotSent):
		a.Each(workload.Recorder.NotSent)
	case err != nil:
		a.Each(workload.Recorder.Unknown)
	default:
		a.Each(workload.Recorder.Applied)
	}
}
