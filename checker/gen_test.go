package checker

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lockbench/lockbench/history"
)

// attempt returns a lock-protected purchase that arrived at t and moved
// one step every unit: acquire, read stock, write (as w says), release,
// answer. The write's answer is missing when w is Indeterminate.
func attempt(client int32, n int16, t, unit, stock int64, w history.WriteState, out history.Outcome) history.Op {
	op := history.Op{
		Client: client, Attempt: n, Node: int16(client % 2),
		Arrival: t, Start: t + unit/10, AcquireCall: t + unit/5, Acquired: t + unit,
		ReadCall: t + 2*unit, ReadReturn: t + 3*unit,
		ReleaseCall: t + 6*unit, Released: t + 7*unit, End: t + 8*unit,
		Stock: stock, Write: w, Outcome: out,
	}
	if w != history.NoWrite {
		op.WriteCall = t + 4*unit
	}
	if w == history.Applied || w == history.Refused {
		op.WriteReturn = t + 5*unit
	}
	return op
}

// gaveUp returns an attempt that never obtained the lock.
func gaveUp(client int32, n int16, t, unit int64, out history.Outcome) history.Op {
	return history.Op{
		Client: client, Attempt: n, Node: int16(client % 2),
		Arrival: t, Start: t + unit/10, AcquireCall: t + unit/5, End: t + 8*unit,
		Stock: history.NoStock, Outcome: out,
	}
}

// saleSpec describes a generated flash sale.
type saleSpec struct {
	ops   int
	stock int64
	// groups is how many groups of four overlapping attempts to place
	// while stock lasts (they read v, v, v-1, v-2 in a scrambled call
	// order, one of the two reading v without writing).
	groups int
	// indeterminate lists the attempts (by position) whose write gets no
	// answer; about half of them land.
	indeterminate []int
	seed          uint64
}

// slot is the time each generated attempt takes: 10 µs, so 100,000
// attempts make a one-second run.
const slot = 10 * int64(time.Microsecond)

// genSale generates the history of a lock-protected sale: most buyers give
// up on a busy lock, a few fail, a few already have an order, the rest buy
// until the stock runs out.
func genSale(s saleSpec) *history.History {
	rng := rand.New(rand.NewPCG(s.seed, 1))
	clients := max(1, s.ops/2)
	h := &history.History{Header: history.Header{
		Schema: history.SchemaVersion, Impl: "lua", Backend: "generated",
		Nodes: 2, Clients: clients, Stock: s.stock, Attempts: 2,
		Duration: int64(s.ops+2) * slot,
	}}
	h.Ops = make([]history.Op, 0, s.ops)
	stock, orders := s.stock, int64(0)
	gap := s.ops
	if s.groups > 0 {
		gap = max(4, int(s.stock)/(s.groups+1)*10/3)
	}
	groups := s.groups
	unit := slot / 10
	for i := 0; i < s.ops; i++ {
		t := int64(i+1) * slot
		c, n := int32(i%clients), int16(i/clients)
		if groups > 0 && i > 0 && i%gap == 0 && stock >= 3 && i+4 <= s.ops {
			h.Ops = append(h.Ops, group(i, clients, t, stock, rng)...)
			groups--
			stock -= 3
			orders += 3
			i += 3
			continue
		}
		if slices.Contains(s.indeterminate, i) && stock > 0 {
			h.Ops = append(h.Ops, attempt(c, n, t, unit, stock, history.Indeterminate, history.Unknown))
			if rng.IntN(2) == 0 {
				stock--
				orders++
			}
			continue
		}
		r := rng.IntN(100)
		switch {
		case r < 62:
			h.Ops = append(h.Ops, gaveUp(c, n, t, unit, history.GaveUp))
		case r < 67:
			h.Ops = append(h.Ops, gaveUp(c, n, t, unit, history.Failed))
		case r < 70:
			h.Ops = append(h.Ops, attempt(c, n, t, unit, stock, history.NoWrite, history.Duplicate))
		case stock == 0:
			h.Ops = append(h.Ops, attempt(c, n, t, unit, 0, history.NoWrite, history.SoldOut))
		default:
			h.Ops = append(h.Ops, attempt(c, n, t, unit, stock, history.Applied, history.Sold))
			stock--
			orders++
		}
	}
	h.Final = history.Final{Stock: stock, Orders: orders}
	return h
}

// group returns four attempts at positions i..i+3 that overlap in time
// (their locks too): two read v (one writes), then v-1 and v-2, called in a
// scrambled order so that the checker has to find the order.
func group(i, clients int, t, v int64, rng *rand.Rand) []history.Op {
	reads := []int64{v, v, v - 1, v - 2}
	rng.Shuffle(len(reads), func(a, b int) { reads[a], reads[b] = reads[b], reads[a] })
	ops := make([]history.Op, 4)
	dup := false
	for k, stock := range reads {
		c, n := int32((i+k)%clients), int16((i+k)/clients)
		w, out := history.Applied, history.Sold
		if stock == v && !dup {
			w, out, dup = history.NoWrite, history.Duplicate, true
		}
		// Calls a tenth of a slot apart, all answered after the last call.
		op := attempt(c, n, t+int64(k)*slot/10, slot/10, stock, w, out)
		ops[k] = op
	}
	return ops
}
