package sales_test

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// itemServers are the servers an items test runs on: the embedded one,
// and a real redis-server when there is one (required with
// LOCKBENCH_REQUIRE_REDIS=1).
func itemServers(t *testing.T) map[string]servers.Backend {
	t.Helper()
	out := map[string]servers.Backend{"embedded": redistest.Embedded(t)}
	if !redistest.Available() {
		if os.Getenv(redistest.RequireEnv) == "1" {
			t.Fatal("redis-server not on PATH")
		}
		// A subtest of its own, so that the skip shows in the list.
		t.Run("redis", func(t *testing.T) {
			t.Skipf("redis-server not on PATH: the real-Redis case skipped (%s=1 makes this fatal)", redistest.RequireEnv)
		})
		return out
	}
	ext, err := servers.DialRedis(t.Context(), redistest.Start(t), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ext.Close() })
	out["redis"] = ext
	return out
}

// itemSale runs a small sale of sale with w's items, carts and readers.
func itemSale(t *testing.T, s servers.Backend, name string, sale workload.Sale, w workload.Workload) *history.History {
	t.Helper()
	w.Prefix, w.Clients, w.Nodes, w.Workers, w.Pool = "items:", cmp.Or(w.Clients, 300), 2, 20, 8
	w.Attempts, w.Ramp, w.Timeout, w.CommandTimeout = 1, 200*time.Millisecond, time.Minute, 5*time.Second
	w.Seed = 1
	h, err := workload.Run(t.Context(), workload.Config{Name: name, Sale: sale, Servers: &servers.Set{Redis: s}, Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestItemsCartsAllOrNone: multi sells carts of up to three of four items,
// each all or none: every attempt's items are all sold or none, every
// item's counter and orders agree with what was sold of it, and the
// checker passes the history, item by item.
func TestItemsCartsAllOrNone(t *testing.T) {
	for name, s := range itemServers(t) {
		t.Run(name, func(t *testing.T) {
			h := itemSale(t, s, "multi", lockSale(t, "multi"), workload.Workload{Stock: 40, Items: 4, Cart: 3, Reads: 10})
			if h.Header.Items != 4 || h.Header.Cart != 3 || len(h.Final.Items) != 4 {
				t.Fatalf("header items %d cart %d, %d final items; want 4, 3, 4", h.Header.Items, h.Header.Cart, len(h.Final.Items))
			}
			type attempt struct{ client int32 }
			outcomes := map[attempt][]history.Outcome{}
			soldOf := make([]int64, 4)
			carts := 0
			for _, op := range h.Ops {
				k := attempt{op.Client}
				outcomes[k] = append(outcomes[k], op.Outcome)
				if op.Outcome == history.Sold {
					soldOf[op.Item]++
				}
			}
			for k, outs := range outcomes {
				if len(outs) < 2 {
					continue
				}
				carts++
				if n := count(outs, history.Sold); n > 0 && n < len(outs) {
					t.Errorf("buyer %d's cart: %v, not all or none", k.client, outs)
				}
			}
			if carts == 0 {
				t.Error("no cart of several items was drawn")
			}
			for i, f := range h.Final.Items {
				if f.Stock != 40-soldOf[i] || f.Orders != soldOf[i] {
					t.Errorf("item %d: final stock %d, orders %d; sold %d of 40", i, f.Stock, f.Orders, soldOf[i])
				}
			}
			if rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second}); !rep.Pass {
				t.Errorf("checker fails the sale: %v", rep.Reasons)
			}
		})
	}
}

func count(outs []history.Outcome, o history.Outcome) int {
	n := 0
	for _, x := range outs {
		if x == o {
			n++
		}
	}
	return n
}

// TestRWReadersShare: in a sale under rw with half the buyers reading
// (each holding the read lock for its page, 2 ms), readers' sections
// overlap one another while no writer overlaps anyone: the lock audit
// passes, and the overlaps among readers are there to see.
func TestRWReadersShare(t *testing.T) {
	for name, s := range itemServers(t) {
		t.Run(name, func(t *testing.T) {
			h := itemSale(t, s, "rw", lockSale(t, "rw"), workload.Workload{Stock: 100, Items: 2, Reads: 50, Hold: 2 * time.Millisecond, Clients: 200})
			rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second})
			if !rep.Pass || rep.Lock.Overlaps != 0 {
				t.Errorf("rw sale: pass %v, %d overlaps: %v", rep.Pass, rep.Lock.Overlaps, rep.Reasons)
			}
			if n := sharedOverlaps(h); n == 0 {
				t.Error("no two readers held an item's read lock at once")
			} else {
				t.Logf("%d readers entered while another reader of the item was inside", n)
			}
		})
	}
}

// sharedOverlaps counts readers that took an item's read lock while
// another reader of that item held it.
func sharedOverlaps(h *history.History) int {
	var ops []history.Op
	for _, op := range h.Ops {
		if op.Shared && op.Holds() {
			ops = append(ops, op)
		}
	}
	slices.SortFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Acquired, b.Acquired) })
	n := 0
	for i, b := range ops {
		for _, a := range ops[:i] {
			if a.Item == b.Item && b.Acquired < a.HoldEnd(h.Header.Duration) {
				n++
				break
			}
		}
	}
	return n
}

// TestSupports: several items, carts, readers and a pipeline run on the
// sales that can run them, and are refused, with ErrWorkload, on the
// others.
func TestSupports(t *testing.T) {
	for _, tt := range []struct {
		sale workload.Sale
		w    workload.Workload
		ok   bool
	}{
		{sales.NoLock(), workload.Workload{Items: 3, Cart: 3, Reads: 10}, true},
		{sales.Atomic(), workload.Workload{Items: 3, Reads: 10}, true},
		{sales.Atomic(), workload.Workload{Items: 3, Cart: 2}, false},
		{lockSale(t, "multi"), workload.Workload{Items: 3, Cart: 2}, true},
		{lockSale(t, "lua"), workload.Workload{Items: 3, Cart: 2}, false},
		{lockSale(t, "lua"), workload.Workload{Items: 3, Reads: 50}, true},
		{lockSale(t, "multi"), workload.Workload{Items: 2, Cart: 3}, false},
		{lockSale(t, "rw"), workload.Workload{Reads: 101}, false},
		{sales.Atomic(), workload.Workload{Pipeline: 64}, true},
		{sales.Atomic(), workload.Workload{Pipeline: workload.MaxPipeline + 1}, false},
		{sales.Atomic(), workload.Workload{Pipeline: -1}, false},
		{sales.NoLock(), workload.Workload{Pipeline: 2}, false},
		{lockSale(t, "lua"), workload.Workload{Pipeline: 2}, false},
	} {
		err := workload.Supports(tt.sale, tt.w)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, workload.ErrWorkload) {
			t.Errorf("Supports(%T, items %d cart %d reads %d pipeline %d) = %v, want ok %v", tt.sale, tt.w.Items, tt.w.Cart, tt.w.Reads, tt.w.Pipeline, err, tt.ok)
		}
	}
}
