package matrix_test

import (
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/servers"
)

// The failover rows of the truth table run under TestTruthTable's
// sentinel kind, each on a primary, a replica and three Sentinels of its
// own; a failover-prone cell is judged over failoverSeeds.

// sentinelCell reports whether a cell needs the failover topology: its
// fault is the failover, or its lock waits for a replica.
func sentinelCell(c matrix.Cell) bool {
	im, ok := harness.Lookup(c.Impl)
	return c.Fault == "failover" || ok && im.Needs().Has(servers.KindRedisReplica)
}

// failoverSeeds bounds the seeds of the failover rows: each run stops a
// primary until the Sentinels promote its replica, a second or two.
const failoverSeeds = 5
