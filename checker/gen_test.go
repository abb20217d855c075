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

// atomicAttempt returns a purchase by the lock-free atomic implementation
// that arrived at t: one script that read stock and wrote as w says, over
// [t+2unit, t+5unit], as long as an attempt's read and write (so that the
// groups overlap alike).
func atomicAttempt(client int32, n int16, t, unit, stock int64, w history.WriteState, out history.Outcome) history.Op {
	op := history.Op{
		Client: client, Attempt: n, Node: int16(client % 2),
		Arrival: t, Start: t + unit/10, ReadCall: t + 2*unit, ReadReturn: t + 5*unit, End: t + 6*unit,
		Stock: stock, Write: w, Outcome: out,
	}
	if w == history.Applied {
		op.WriteCall, op.WriteReturn = op.ReadCall, op.ReadReturn
	}
	return op
}

// blindAttempt returns a purchase by the atomic implementation whose
// script was sent at t+2unit and never answered.
func blindAttempt(client int32, n int16, t, unit int64) history.Op {
	return history.Op{
		Client: client, Attempt: n, Node: int16(client % 2),
		Arrival: t, Start: t + unit/10, ReadCall: t + 2*unit, WriteCall: t + 2*unit, End: t + 8*unit,
		Stock: history.NoStock, Write: history.Indeterminate, Outcome: history.Unknown,
	}
}

// unsent returns an attempt of the atomic implementation whose script
// failed before it was sent.
func unsent(client int32, n int16, t, unit int64) history.Op {
	return history.Op{
		Client: client, Attempt: n, Node: int16(client % 2),
		Arrival: t, Start: t + unit/10, ReadCall: t + 2*unit, End: t + 3*unit,
		Stock: history.NoStock, Outcome: history.Failed,
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
	// atomic generates the lock-free atomic implementation's history:
	// each attempt is one script, and the buyers that would give up on a
	// busy lock fail to send it instead.
	atomic bool
	// blind lists the attempts (by position) of an atomic sale whose
	// script gets no answer; about half of them take a unit, if one is
	// left, up to a thousand attempts later.
	blind []int
	seed  uint64
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
	sale := attempt
	if s.atomic {
		h.Header.Impl, h.Header.Lockless, sale = "atomic", true, atomicAttempt
	}
	var lands []int // where blind sales that take a unit take it, in order
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
		for len(lands) > 0 && lands[0] <= i {
			if stock > 0 {
				stock--
				orders++
			}
			lands = lands[1:]
		}
		if slices.Contains(s.blind, i) {
			h.Ops = append(h.Ops, blindAttempt(c, n, t, unit))
			if rng.IntN(2) == 0 {
				lands = append(lands, i+1+rng.IntN(1000))
				slices.Sort(lands)
			}
			continue
		}
		if groups > 0 && i > 0 && i%gap == 0 && stock >= 3 && i+4 <= s.ops {
			h.Ops = append(h.Ops, group(sale, i, clients, t, stock, rng)...)
			groups--
			stock -= 3
			orders += 3
			i += 3
			continue
		}
		if slices.Contains(s.indeterminate, i) && stock > 0 {
			h.Ops = append(h.Ops, sale(c, n, t, unit, stock, history.Indeterminate, history.Unknown))
			if rng.IntN(2) == 0 {
				stock--
				orders++
			}
			continue
		}
		r := rng.IntN(100)
		switch {
		case r < 67 && s.atomic:
			h.Ops = append(h.Ops, unsent(c, n, t, unit))
		case r < 62:
			h.Ops = append(h.Ops, gaveUp(c, n, t, unit, history.GaveUp))
		case r < 67:
			h.Ops = append(h.Ops, gaveUp(c, n, t, unit, history.Failed))
		case r < 70:
			h.Ops = append(h.Ops, sale(c, n, t, unit, stock, history.NoWrite, history.Duplicate))
		case stock == 0:
			h.Ops = append(h.Ops, sale(c, n, t, unit, 0, history.NoWrite, history.SoldOut))
		default:
			h.Ops = append(h.Ops, sale(c, n, t, unit, stock, history.Applied, history.Sold))
			stock--
			orders++
		}
	}
	h.Final = history.Final{Stock: stock, Orders: orders}
	return h
}

// attemptFunc makes one generated attempt: attempt or atomicAttempt.
type attemptFunc func(client int32, n int16, t, unit, stock int64, w history.WriteState, out history.Outcome) history.Op

// group returns four attempts at positions i..i+3, made by sale, that
// overlap in time (their locks too): two read v (one writes), then v-1 and
// v-2, called in a scrambled order so that the checker has to find the
// order.
func group(sale attemptFunc, i, clients int, t, v int64, rng *rand.Rand) []history.Op {
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
		op := sale(c, n, t+int64(k)*slot/10, slot/10, stock, w, out)
		ops[k] = op
	}
	return ops
}

// crowdSpec describes a generated atomic sale where many scripts are in
// flight at once, as in a real run.
type crowdSpec struct {
	ops   int
	stock int64
	// width bounds, in slots, how long before and after the instant it
	// took effect each script was sent and answered.
	width int64
	// burst is how many scripts arrive between quiet moments.
	burst int
	// blind lists the scripts (by position) that get no answer; about
	// half of them take a unit, if one is left, when they run.
	blind []int
	seed  uint64
}

// genCrowd generates a crowded atomic sale: script i takes effect at slot
// i (plus a quiet pause of 2 widths after each burst), within an interval
// of up to width slots either side.
func genCrowd(s crowdSpec) *history.History {
	rng := rand.New(rand.NewPCG(s.seed, 2))
	h := &history.History{Header: history.Header{
		Schema: history.SchemaVersion, Impl: "atomic", Lockless: true, Backend: "generated",
		Nodes: 2, Clients: s.ops, Stock: s.stock, Attempts: 1,
	}}
	stock, orders := s.stock, int64(0)
	at := int64(0)
	for i := range s.ops {
		at += slot
		if i > 0 && i%s.burst == 0 {
			at += 2 * s.width * slot
		}
		call := at - 1 - rng.Int64N(s.width*slot)
		op := history.Op{
			Client: int32(i), Node: int16(i % 2), Arrival: call, Start: call, ReadCall: call,
			Stock: history.NoStock,
		}
		if slices.Contains(s.blind, i) {
			op.WriteCall, op.Write, op.Outcome = call, history.Indeterminate, history.Unknown
			op.End = at + s.width*slot
			if stock > 0 && rng.IntN(2) == 0 {
				stock--
				orders++
			}
			h.Ops = append(h.Ops, op)
			continue
		}
		ret := at + 1 + rng.Int64N(s.width*slot)
		op.ReadReturn, op.End, op.Stock = ret, ret, stock
		op.Write, op.Outcome = history.NoWrite, history.SoldOut
		if stock > 0 {
			op.Write, op.Outcome = history.Applied, history.Sold
			op.WriteCall, op.WriteReturn = call, ret
			stock--
			orders++
		}
		h.Ops = append(h.Ops, op)
	}
	h.Header.Duration = at + 2*s.width*slot
	h.Final = history.Final{Stock: stock, Orders: orders}
	return h
}
