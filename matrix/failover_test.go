package matrix_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/workload"
)

// TestFailoverLosesTheLock makes the failover happen on the Sentinel
// topology: under lua the second holder gets in while the first still
// holds (the promoted replica never had the lock); lua-wait, whose lock
// is granted only once the replica has it, stays safe under the same
// fault.
func TestFailoverLosesTheLock(t *testing.T) {
	if testing.Short() {
		t.Skip("two Sentinel failovers take seconds")
	}
	if !redistest.SentinelAvailable() {
		if os.Getenv(redistest.RequireSentinelEnv) == "1" {
			t.Fatalf("redis-server or redis-sentinel is not on PATH and %s=1", redistest.RequireSentinelEnv)
		}
		t.Skipf("redis-server or redis-sentinel is not on PATH (apt-get install redis-server redis-sentinel); set %s=1 to fail instead", redistest.RequireSentinelEnv)
	}
	sv := open(t, harness.ServerOptions{Backend: harness.BackendSentinel}, workload.NeedsRedis)
	for _, name := range []string{"lua/failover", "lua-wait/failover"} {
		cell := truthCell(t, name)
		t.Run(cell.Impl, func(t *testing.T) {
			base := harness.Plan{Workload: matrix.Defaults(), Seed: 1}
			base.Workload.Prefix = fmt.Sprintf("lockbench-failover:%s:", cell.Impl)
			start := time.Now()
			mc, err := matrix.RunCell(t.Context(), sv, cell, matrix.Options{Base: base})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s in %v: measured %s (sold %d/%d, oversold %d, overlaps %d, faults %d)", cell.Name(), time.Since(start).Round(time.Millisecond),
				mc.Measured, mc.Run.Sold, mc.Run.Stock, mc.Run.Oversold, mc.Run.Lock.Overlaps, len(mc.Run.Faults))
			if !mc.Match {
				t.Errorf("expected %s, measured %s; reasons: %s", mc.Expected, mc.Measured, strings.Join(mc.Run.Reasons, "; "))
			}
		})
	}
}

// sentinelCell reports whether a cell needs the failover topology: its
// fault is the failover, or its lock waits for a replica.
func sentinelCell(c matrix.Cell) bool {
	im, ok := harness.Lookup(c.Impl)
	return c.Fault == "failover" || ok && im.Needs().Has(workload.NeedsReplica)
}

// failoverSeeds bounds the seeds of the failover rows: each run stops a
// primary until the Sentinels promote its replica, a second or two.
const failoverSeeds = 5

// truthCell is the truth table's cell of that name.
func truthCell(t *testing.T, name string) matrix.Cell {
	t.Helper()
	for _, c := range matrix.Truth {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no cell %s in the truth table", name)
	return matrix.Cell{}
}
