package workload

import (
	"testing"
)

// TestBacklogCounts: a node's count of the buyers it has not begun follows
// its buyers through delivery, start, a later attempt's start and answer,
// and the node is backlogged (its next buyer may wait in the link) only
// while more of them wait than max(2 pools, minBacklog).
func TestBacklogCounts(t *testing.T) {
	const clients = 2 * minBacklog
	r := testRun(1, clients)
	r.cfg.Workers = 1
	r.cfg.Injector = NoFaults{} // under faults, the coordinator hands out each buyer
	co := newCoordinator(r)
	rn := newRemoteNode(co, r.nodes[0])
	co.nodes = []*remoteNode{rn}
	// waiting is what the count must be: the buyers in flight with no
	// attempt begun.
	check := func(what string, backlogged bool) {
		t.Helper()
		rn.mu.Lock()
		defer rn.mu.Unlock()
		waiting := 0
		for _, f := range rn.inflight {
			if f.attempt < 0 {
				waiting++
			}
		}
		if rn.unstarted != waiting {
			t.Fatalf("%s: counted %d buyers not begun, %d are", what, rn.unstarted, waiting)
		}
		if got := rn.backlogged(); got != backlogged {
			t.Fatalf("%s: %d waiting, backlogged %v, want %v", what, waiting, got, backlogged)
		}
	}
	for c := range int32(minBacklog) {
		co.deliver(t.Context(), c)
	}
	check("minBacklog delivered", false)
	co.deliver(t.Context(), minBacklog)
	check("one more", true)
	begin := func(c int32, attempt int16) bool {
		rn.mu.Lock()
		defer rn.mu.Unlock()
		return rn.begin(c, attempt, r.now())
	}
	for c := range int32(10) {
		if !begin(c, 0) {
			t.Fatalf("buyer %d in flight did not begin", c)
		}
	}
	check("10 begun", false)
	if !begin(3, 1) {
		t.Fatal("buyer 3's second attempt did not begin")
	}
	check("a second attempt begun", false)
	if begin(clients-1, 0) {
		t.Fatal("a buyer never delivered began")
	}
	check("a start for a buyer not served", false)
	rn.answered(3)  // begun
	rn.answered(20) // never begun (its context ended first)
	check("two answered", false)
	rn.mu.Lock()
	rn.killed = true
	rn.mu.Unlock()
	if begin(30, 0) {
		t.Fatal("a buyer began on a node being killed")
	}
	check("a start on a node being killed", false)
}
