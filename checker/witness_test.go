package checker

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

// smallSale generates a small history: a sequential execution of up to
// eight operations (reads with an applied, refused, absent or unanswered
// write, product-page reads, and blind sales that take a unit or not),
// each stretched into an interval around its instant so that they
// overlap, and then, half the time, one planted edit (a stock read one
// off, a write's fate flipped, a call moved, a page showing the starting
// stock) that may or may not make it illegal.
func smallSale(rng *rand.Rand) *history.History {
	start := int64(rng.IntN(5))
	h := &history.History{Header: history.Header{
		Schema: history.SchemaVersion, Impl: "generated", Lockless: true, Stock: start, Clients: 8, Attempts: 1,
	}}
	stock := start
	n := 1 + rng.IntN(8)
	for k := range n {
		at := int64(100 + 20*k)
		call := at - rng.Int64N(30)
		ret := at + rng.Int64N(30)
		op := history.Op{Client: int32(k), Arrival: call, Start: call, End: ret + 1}
		if rng.IntN(6) == 0 {
			// A blind sale: sent at call, never answered.
			op.ReadCall, op.WriteCall, op.Stock = call, call, history.NoStock
			op.Write, op.Outcome = history.Indeterminate, history.Unknown
			if stock > 0 && rng.IntN(2) == 0 {
				stock--
			}
			h.Ops = append(h.Ops, op)
			continue
		}
		op.ReadCall, op.Stock = call, stock
		switch r := rng.IntN(10); {
		case r < 5 && stock > 0:
			op.ReadReturn, op.WriteCall, op.WriteReturn = call+1, call+1, ret
			op.Write, op.Outcome = history.Applied, history.Sold
			stock--
		case r < 6:
			op.ReadReturn, op.WriteCall, op.WriteReturn = call+1, call+1, ret
			op.Write, op.Outcome = history.Refused, history.Rejected
		case r < 8:
			op.ReadReturn, op.WriteCall = call+1, call+1
			op.Write, op.Outcome = history.Indeterminate, history.Unknown
			if rng.IntN(2) == 0 {
				stock--
			}
		case r < 9:
			// A product page (--reads): the stock read at its instant,
			// over the whole interval, and nothing written.
			op.ReadReturn = ret
			op.Write, op.Outcome = history.NoWrite, history.Viewed
		default:
			op.ReadReturn = ret
			op.Write, op.Outcome = history.NoWrite, history.SoldOut
		}
		h.Ops = append(h.Ops, op)
	}
	if rng.IntN(2) == 0 {
		op := &h.Ops[rng.IntN(len(h.Ops))]
		if op.Outcome == history.Viewed && rng.IntN(2) == 0 {
			// A stale page: the stock the sale started with, perhaps
			// long gone.
			op.Stock = start
			return h
		}
		switch rng.IntN(3) {
		case 0:
			if op.Read() {
				op.Stock += int64(1 - 2*rng.IntN(2))
			}
		case 1:
			switch op.Write {
			case history.Applied:
				op.Write = history.NoWrite
				op.ReadReturn = op.WriteReturn
				op.WriteCall, op.WriteReturn = 0, 0
			case history.NoWrite:
				op.Write, op.WriteCall, op.WriteReturn = history.Applied, op.ReadReturn, op.ReadReturn
			}
		default:
			d := int64(40 - rng.IntN(80))
			op.ReadCall = max(1, op.ReadCall+d)
			if op.WriteCall != 0 && op.Write == history.Indeterminate && !op.Read() {
				op.WriteCall = op.ReadCall
			}
			for _, t := range []*int64{&op.ReadReturn, &op.WriteCall, &op.WriteReturn} {
				if *t != 0 && *t < op.ReadCall {
					*t = op.ReadCall
				}
			}
		}
	}
	return h
}

// TestWitnessAgreesWithPorcupine: on 20,000 small random histories, legal
// and illegal, with unknown outcomes and blind sales, the witnesses and
// porcupine's search give the same verdict.
func TestWitnessAgreesWithPorcupine(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var legal, illegal int
	for i := range 20_000 {
		h := smallSale(rng)
		got, _, _ := witness(saleOps(h), h.Header.Stock)
		want := searchInventory(saleOps(h), h.Header.Stock, time.Now(), time.Minute, false).Status
		if got != want {
			b, _ := json.Marshal(h.Ops)
			t.Fatalf("history %d (stock %d): witness %s, porcupine %s\n%s", i, h.Header.Stock, got, want, b)
		}
		if got == OK {
			legal++
		} else {
			illegal++
		}
	}
	t.Logf("%d legal, %d illegal", legal, illegal)
	if legal < 5000 || illegal < 2000 {
		t.Errorf("%d legal, %d illegal: the generator no longer gives both", legal, illegal)
	}
}
