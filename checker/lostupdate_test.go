package checker

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

// TestLostUpdateDecidedWithoutSearch checks that a highly concurrent history
// with a lost update is proved illegal even when porcupine gets no time at
// all: two applied writes read the same stock.
func TestLostUpdateDecidedWithoutSearch(t *testing.T) {
	const n = 2000
	h := &history.History{Header: history.Header{Schema: history.SchemaVersion, Impl: "none", Lockless: true, Stock: n, Duration: 1e9}}
	for i := 0; i < n; i++ {
		stock := int64(n - i)
		if i == n-1 {
			stock = 5 // reads what another buyer read: a lost update
		}
		h.Ops = append(h.Ops, history.Op{
			Client: int32(i), Arrival: 1, Start: 1,
			ReadCall: 10, ReadReturn: 20, WriteCall: 30, WriteReturn: int64(40 + i),
			Stock: stock, Write: history.Applied, Outcome: history.Sold, End: int64(50 + i),
		})
	}
	h.Final = history.Final{Stock: 0, Orders: n}
	got := Check(h, Options{Timeout: time.Nanosecond})
	if got.Data.Linearizability.Status != Illegal {
		t.Fatalf("linearizability = %s, want %s", got.Data.Linearizability.Status, Illegal)
	}
	if w := got.Data.Linearizability.FirstIllegal; w == nil || w.From != 10 {
		t.Errorf("first illegal window = %+v, want one starting at the first call (10)", w)
	}

	// The same history without the duplicate read is legal, and with no
	// time to search must be unknown, never ok.
	h.Ops[n-1].Stock = 1
	if got := Check(h, Options{Timeout: time.Nanosecond}).Data.Linearizability.Status; got == OK {
		t.Errorf("a check with no time reported %s", got)
	}
}
