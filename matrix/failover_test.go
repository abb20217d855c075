package matrix

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/workload"
)

// sentinelBackend starts the failover topology (skipped without
// redis-server and redis-sentinel, unless LOCKBENCH_REQUIRE_SENTINEL=1)
// and reaches it through its Sentinels.
func sentinelBackend(t *testing.T) workload.Backend {
	t.Helper()
	top := redistest.StartSentinel(t)
	b, err := workload.DialSentinel(t.Context(), top.SentinelAddrs(), top.MasterName(), "", top)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFailoverLosesTheLock makes the failover happen on the Sentinel
// topology: under lua the second holder gets in while the first still
// holds (the promoted replica never had the lock); lua-wait, whose lock
// is granted only once the replica has it, stays safe under the same
// fault.
func TestFailoverLosesTheLock(t *testing.T) {
	if testing.Short() {
		t.Skip("two Sentinel failovers take seconds")
	}
	sv := workload.Servers{Redis: sentinelBackend(t)}
	for _, cell := range []Cell{
		{Impl: "lua", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap},
		{Impl: "lua-wait", Fault: "failover", TTL: failoverLease, Want: NoOverlap},
	} {
		t.Run(cell.Impl, func(t *testing.T) {
			base := harness.Plan{Workload: Defaults(), Seed: 1}
			base.Workload.Prefix = fmt.Sprintf("lockbench-failover:%s:", cell.Impl)
			start := time.Now()
			mc, err := RunCell(t.Context(), &sv, cell, Options{Base: base})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s in %v: measured %s (sold %d/%d, oversold %d, overlaps %d, faults %d)", cell.Name(), time.Since(start).Round(time.Millisecond),
				mc.Measured, mc.Run.Sold, mc.Run.Stock, mc.Run.Oversold, mc.Run.LockOverlaps, len(mc.Run.Faults))
			if !mc.Match {
				t.Errorf("expected %s, measured %s; reasons: %s", mc.Expected, mc.Measured, strings.Join(mc.Run.Reasons, "; "))
			}
		})
	}
}

// sentinelCell reports whether a cell needs the failover topology: its
// fault is the failover, or its lock waits for a replica.
func sentinelCell(c Cell) bool {
	im, ok := harness.Lookup(c.Impl)
	return c.Fault == "failover" || ok && im.Needs().Has(workload.NeedsReplica)
}

// failoverSeeds bounds the seeds of the failover rows: each run stops a
// primary until the Sentinels promote its replica, a second or two.
const failoverSeeds = 5
