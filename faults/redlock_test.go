package faults

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// redlockSale runs a sale of im on five embedded servers with the faults
// in spec, and judges it.
func redlockSale(t *testing.T, im locks.Impl, spec string, lease time.Duration, seed uint64) (*history.History, checker.Report) {
	t.Helper()
	return redlockSaleHeld(t, im, spec, lease, 0, seed)
}

// redlockSaleHeld is redlockSale with a business step of hold inside
// every critical section.
func redlockSaleHeld(t *testing.T, im locks.Impl, spec string, lease, hold time.Duration, seed uint64) (*history.History, checker.Report) {
	t.Helper()
	cl, err := servers.StartEmbeddedCluster(locks.RedlockServers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	specs, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	inj, err := New(specs, Env{Lease: lease, CommandTimeout: 500 * time.Millisecond, Nodes: 2, Seed: seed}, workload.Reach{Store: cl, Routed: true, InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inj.Close() })
	h, err := workload.Run(t.Context(), workload.Config{
		Name: im.Name, Sale: sales.LockSale(im), Servers: &servers.Set{Redis: cl}, Injector: inj,
		Workload: workload.Workload{Prefix: "t:", Clients: 200, Nodes: 2, Workers: 10, Pool: 16,
			Stock: 100, Attempts: 1, Ramp: 300 * time.Millisecond, TTL: lease, Timeout: time.Minute,
			CommandTimeout: 500 * time.Millisecond, Hold: hold},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, checker.Check(h, checker.Options{Timeout: time.Minute})
}

// TestRedlockEveryServerBehindTheProxy: every redlock server is behind
// the fault proxy, so that a fault on a node's link (cut-link, partition,
// latency) reaches each of them: while node 0's link is cut, none of its
// clients wins a majority, and none holds the lock. With only the first
// server behind the proxy, node 0 still reached the four others and
// took the lock during the cut.
func TestRedlockEveryServerBehindTheProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a sale on five servers")
	}
	const spec = "cut-link:node=0:after=0s:for=1s"
	h, _ := redlockSale(t, lookup(t, "redlock"), spec, time.Second, 1)
	if len(h.Faults) != 1 || h.Faults[0].End == 0 {
		t.Fatalf("%s: injections %+v, want one that ended", spec, h.Faults)
	}
	cut := h.Faults[0]
	for _, op := range h.Ops {
		if op.Node == 0 && op.Holds() && op.Acquired > cut.Start && op.Acquired < cut.End {
			t.Errorf("node 0 took the lock at %v, inside its cut (%v to %v): a server it reached was not behind the proxy", time.Duration(op.Acquired), time.Duration(cut.Start), time.Duration(cut.End))
		}
	}
	sold := false
	for _, op := range h.Ops {
		sold = sold || op.Node == 1 && op.Holds() && op.Acquired > cut.Start && op.Acquired < cut.End
	}
	if !sold {
		t.Error("node 1 took no lock during node 0's cut: the sale did not run")
	}
}
