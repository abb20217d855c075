package workload

import (
	"context"
	"errors"
	"strconv"

	"github.com/lockbench/lockbench/history"
)

// client is one buyer: up to Attempts purchases, until one is answered.
func (r *run) client(ctx context.Context, n *node, c int32) {
	defer r.finished.Add(1)
	if ctx.Err() != nil {
		return
	}
	cctx, cancel := context.WithCancelCause(context.WithValue(ctx, clientKey{}, c))
	defer cancel(nil)
	r.kill[c].Store(&cancel)
	defer r.kill[c].Store(nil)

	owner := make([]byte, 0, 40)
	for a := 0; a < r.cfg.Attempts; a++ {
		op := &r.ops[int(c)*r.cfg.Attempts+a]
		if a > 0 {
			*op = history.Op{Client: c, Attempt: int16(a), Node: int16(n.id), Stock: history.NoStock, Arrival: r.now()}
		}
		owner = append(owner[:0], n.uuid...)
		owner = append(owner, ':')
		owner = strconv.AppendInt(owner, int64(c), 10)
		owner = append(owner, '.')
		owner = strconv.AppendInt(owner, int64(a), 10)
		r.purchase(cctx, n, op, string(owner))
		switch op.Outcome {
		case history.Sold, history.SoldOut, history.Duplicate, history.Crashed, history.Pending:
			return
		}
	}
}

// purchase is one attempt, by the implementation's sale.
func (r *run) purchase(ctx context.Context, n *node, op *history.Op, owner string) {
	op.Start = r.now()
	defer func() {
		if op.Outcome != history.Pending {
			op.End = r.now()
		}
		switch op.Outcome {
		case history.Sold:
			r.sold.Add(1)
		case history.Crashed:
			op.Crash = r.crashAt[op.Client].Load()
		}
	}()
	rec := recorder{r: r, op: op, ctx: ctx}
	r.cfg.Sale.buy(ctx, r, n, &rec, strconv.FormatInt(int64(op.Client), 10), owner)
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
