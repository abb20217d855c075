package sales_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// lockSale is the sale under the registered lock called name.
func lockSale(t *testing.T, name string) workload.Sale {
	t.Helper()
	im, ok := locks.Lookup(name)
	if !ok {
		t.Fatalf("no lock %s", name)
	}
	return sales.LockSale(im)
}

// sold counts the attempts that told their buyer the unit was theirs.
func sold(h *history.History) int64 {
	var n int64
	for _, op := range h.Ops {
		if op.Outcome == history.Sold {
			n++
		}
	}
	return n
}

// TestSales runs each safe sale on the embedded Redis: it sells exactly
// min(stock, buyers), the audited final state agrees (stock taken, one
// order per unit, no user twice), and the checker passes the history.
func TestSales(t *testing.T) {
	b := redistest.Embedded(t)
	tests := []struct {
		name           string
		sale           workload.Sale
		nodes, workers int
		clients        int
		stock          int64
		locked         bool // the lock's exclusion is audited
		pipeline       int
	}{
		// Without a lock, one buyer at a time is the only safe way.
		{"nolock, one worker", sales.NoLock(), 1, 1, 60, 40, false, 0},
		{"atomic, sold out", sales.Atomic(), 2, 20, 200, 120, false, 0},
		{"atomic, stock left", sales.Atomic(), 2, 20, 80, 120, false, 0},
		{"atomic pipelined, sold out", sales.Atomic(), 2, 20, 200, 120, false, 8},
		{"atomic pipelined, stock left", sales.Atomic(), 2, 20, 80, 120, false, 8},
		{"lua", lockSale(t, "lua"), 2, 20, 150, 100, true, 0},
		{"fenced", lockSale(t, "fenced"), 2, 20, 150, 100, true, 0},
		{"watchdog, stock left", lockSale(t, "watchdog"), 2, 20, 60, 100, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.NewReplacer(" ", "-", ",", "").Replace(tt.name)
			h, err := workload.Run(t.Context(), workload.Config{
				Name: name, Sale: tt.sale, Servers: &servers.Set{Redis: b},
				Workload: workload.Workload{Prefix: "sales:", Clients: tt.clients, Nodes: tt.nodes, Workers: tt.workers, Pool: 8, Pipeline: tt.pipeline,
					Stock: tt.stock, Attempts: 1, Ramp: 100 * time.Millisecond, Timeout: time.Minute, CommandTimeout: 5 * time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			want := min(tt.stock, int64(tt.clients))
			if got := sold(h); got != want {
				t.Errorf("sold %d, want %d", got, want)
			}
			if h.Final.Stock != tt.stock-want || h.Final.Orders != want || h.Final.DuplicateOrders != 0 {
				t.Errorf("final stock %d, orders %d, duplicate orders %d; want %d, %d, 0", h.Final.Stock, h.Final.Orders, h.Final.DuplicateOrders, tt.stock-want, want)
			}
			if len(h.Ops) != tt.clients || h.Header.CutShort {
				t.Errorf("%d attempts recorded, cut short %v; want %d, not cut", len(h.Ops), h.Header.CutShort, tt.clients)
			}
			rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second})
			if !rep.Pass {
				t.Errorf("checker fails the sale: %v", rep.Reasons)
			}
			if locked := rep.Lock.Status != checker.NotApplicable; locked != tt.locked {
				t.Errorf("lock safety %s: audited %v, want %v", rep.Lock.Status, locked, tt.locked)
			}
		})
	}
}

// TestNoLockOversells: with no lock, two nodes and a business step
// between the read and the write, buyers who read the same stock each
// sell a unit it no longer has. It is a race, so the sale is tried a few
// times; the test fails if no try oversold.
func TestNoLockOversells(t *testing.T) {
	b := redistest.Embedded(t)
	for try := range 3 {
		h, err := workload.Run(t.Context(), workload.Config{
			Name: "nolock", Sale: sales.NoLock(), Servers: &servers.Set{Redis: b},
			Workload: workload.Workload{Prefix: "oversell:", Clients: 40, Nodes: 2, Pool: 8, Stock: 10, Attempts: 1,
				Hold: 20 * time.Millisecond, Timeout: time.Minute, CommandTimeout: 5 * time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second})
		taken := h.Header.Stock - h.Final.Stock
		if h.Final.Orders > taken {
			// The store itself shows it: more orders than units taken.
			if rep.Pass || rep.Data.Oversold == 0 {
				t.Errorf("%d orders for %d units taken, yet the checker passes it (oversold %d)", h.Final.Orders, taken, rep.Data.Oversold)
			}
			return
		}
		t.Logf("try %d: %d orders, %d units taken: no oversell this time", try+1, h.Final.Orders, taken)
	}
	t.Error("an unguarded sale with a business step never oversold in 3 tries")
}
