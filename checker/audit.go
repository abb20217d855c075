package checker

import (
	"cmp"
	"slices"

	"github.com/lockbench/lockbench/history"
)

// checkData adds the order audit (oversold, lost and duplicate orders) to
// the linearizability result.
func checkData(h *history.History, lin Linearizability) Data {
	d := Data{
		Linearizability: lin,
		Orders:          h.Final.Orders,
		DuplicateOrders: h.Final.DuplicateOrders,
		NegativeStock:   h.Final.Stock < 0,
		FinalStock:      h.Final.Stock,
	}
	applied := make(map[int32]int)
	for i := range h.Ops {
		if h.Ops[i].Outcome == history.Sold {
			d.Sold++
		}
		switch h.Ops[i].Write {
		case history.Indeterminate:
			d.Indeterminate++
		case history.Applied:
			applied[h.Ops[i].Client]++
		}
	}
	// One order per user: a user whose purchase was applied twice in the
	// history got two, whatever the store's final state says (a store
	// that shows one has lost the other). Users the final state already
	// names are counted there.
	for client, n := range applied {
		if n > 1 && !slices.Contains(h.Final.DuplicateUsers, client) {
			d.DuplicateSales++
		}
	}
	// Orders beyond what the counter lost catch lost updates; orders
	// beyond the stock catch a counter that went negative as well.
	consumed := h.Header.Stock - h.Final.Stock
	d.Oversold = max(0, d.Orders-consumed, d.Orders-h.Header.Stock)
	// Fewer orders than confirmed sales: acknowledged writes were lost.
	// (More is no finding: a sale whose reply was lost may have landed.)
	d.LostOrders = max(0, d.Sold-d.Orders)
	audited := d.Oversold == 0 && d.LostOrders == 0 && d.DuplicateOrders == 0 && d.DuplicateSales == 0 && !d.NegativeStock
	switch {
	case lin.Status == OK && audited:
		d.Status = OK
	case lin.Status == Unknown && audited:
		d.Status = Unknown
	default:
		d.Status = Violated
	}
	return d
}

// checkLock counts critical sections that began while a different owner
// still held the lock, naming the first maxPairs of them.
func checkLock(h *history.History, maxPairs int) Lock {
	if h.Header.Lockless {
		return Lock{Status: NotApplicable}
	}
	var cs []OpRef
	for i := range h.Ops {
		op := &h.Ops[i]
		if !op.Holds() {
			continue
		}
		cs = append(cs, OpRef{
			Index: i, Client: op.Client, Attempt: op.Attempt, Node: op.Node,
			From: op.Acquired, To: op.HoldEnd(h.Header.Duration),
		})
	}
	slices.SortFunc(cs, func(a, b OpRef) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Index, b.Index))
	})
	l := Lock{Status: OK}
	// Comparing with the earlier section that ends last is enough to tell
	// whether a section began inside some other one.
	last := -1
	for i := range cs {
		b := &cs[i]
		if last >= 0 {
			a := &cs[last]
			if b.From < a.To && (a.Client != b.Client || a.Attempt != b.Attempt) {
				l.Overlaps++
				if len(l.Pairs) < maxPairs {
					l.Pairs = append(l.Pairs, Overlap{A: *a, B: *b, Duration: max(0, min(a.To, b.To)-b.From)})
				}
			}
		}
		if last < 0 || b.To > cs[last].To {
			last = i
		}
	}
	if l.Overlaps > 0 {
		l.Status = Violated
	}
	return l
}

// checkLiveness looks at each buyer's last attempt: a buyer who gave up
// while units were left points at a lock nobody could take.
func checkLiveness(h *history.History) Liveness {
	last := make(map[int32]int, len(h.Ops))
	for i := range h.Ops {
		op := &h.Ops[i]
		if j, ok := last[op.Client]; !ok || op.Attempt > h.Ops[j].Attempt {
			last[op.Client] = i
		}
	}
	l := Liveness{Status: OK, CutShort: h.Header.CutShort}
	for _, i := range last {
		switch h.Ops[i].Outcome {
		case history.GaveUp, history.Failed, history.Pending, history.Unknown:
			l.GaveUp++
		}
	}
	if h.Final.Stock > 0 && l.GaveUp > 0 {
		l.Unsold = h.Final.Stock
	}
	if l.CutShort || l.Unsold > 0 {
		l.Status = Violated
	}
	return l
}
