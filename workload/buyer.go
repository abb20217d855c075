package workload

import (
	"context"
	"errors"
	"strconv"

	"github.com/lockbench/lockbench/history"
)

// client is one buyer: up to Attempts purchases, until one is answered.
// Each attempt is one Op per item of the buyer's cart.
func (r *run) client(ctx context.Context, n *node, c int32) {
	defer func() {
		r.finished.Add(1)
		if r.link != nil {
			r.link.done(c, r.slots(c))
		}
	}()
	if ctx.Err() != nil {
		return
	}
	cctx, cancel := context.WithCancelCause(context.WithValue(ctx, clientKey{}, c))
	defer cancel(nil)
	r.kill[r.slot(c)].Store(&cancel)
	defer r.kill[r.slot(c)].Store(nil)
	slots := r.slots(c)

	items, reader := r.cartOf(c)
	owner := make([]byte, 0, 40)
	for a := 0; a < r.cfg.Attempts; a++ {
		ops := slots[a*r.cart : a*r.cart+len(items)]
		arrival := ops[0].Arrival
		if a > 0 {
			arrival = r.now()
		}
		for j := range ops {
			if a > 0 || j > 0 {
				ops[j] = history.Op{Client: c, Attempt: int16(a), Node: int16(n.id), Stock: history.NoStock, Arrival: arrival}
			}
			ops[j].Item = int32(items[j])
		}
		owner = append(owner[:0], n.uuid...)
		owner = append(owner, ':')
		owner = strconv.AppendInt(owner, int64(c), 10)
		owner = append(owner, '.')
		owner = strconv.AppendInt(owner, int64(a), 10)
		r.purchase(cctx, n, ops, string(owner), reader)
		switch ops[0].Outcome {
		case history.Sold, history.SoldOut, history.Duplicate, history.Crashed, history.Pending, history.Viewed, history.CartRefused:
			return
		}
	}
}

// purchase is one attempt, by the node's seller (or a look at the
// product page, for a reader), told to a recorder per item of its cart.
func (r *run) purchase(ctx context.Context, n *node, ops []history.Op, owner string, reader bool) {
	start := r.now()
	if r.link != nil {
		if err := r.link.started(ctx, ops[0].Client, ops[0].Attempt, start); err != nil {
			return // the node is going away; its coordinator never saw this attempt begin
		}
	}
	a := &Attempt{Client: ops[0].Client, User: strconv.FormatInt(int64(ops[0].Client), 10), Owner: owner,
		Items: make([]int, len(ops)), Cart: make([]Recorder, len(ops))}
	for j := range ops {
		ops[j].Start = start
		a.Items[j] = int(ops[j].Item)
		a.Cart[j] = &recorder{r: r, op: &ops[j], ctx: ctx}
	}
	defer func() {
		end := r.now()
		for j := range ops {
			op := &ops[j]
			if op.Outcome != history.Pending {
				op.End = end
			}
			switch op.Outcome {
			case history.Sold:
				r.sold.Add(1)
			case history.Crashed:
				op.Crash = r.crashAt[r.slot(op.Client)].Load()
			}
		}
	}()
	if reader {
		n.seller.(Viewer).View(ctx, a) // startNode made sure it is one
		return
	}
	n.seller.Sell(ctx, a)
}

// failed names the outcome of an attempt that stopped on an error: a
// crash if a fault killed the client, pending if the run ended under it,
// otherwise dflt.
func (r *run) failed(ctx context.Context, dflt history.Outcome) history.Outcome {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrCrashed):
		return history.Crashed
	case cause != nil:
		return history.Pending
	}
	return dflt
}
