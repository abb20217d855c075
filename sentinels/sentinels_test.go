package sentinels_test

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/redistest"
)

// TestFailoverLosesHeldWrites: a write the primary acknowledged while
// replication was held is not on the replica the Sentinels promote; a
// write made before the hold is.
func TestFailoverLosesHeldWrites(t *testing.T) {
	top := redistest.StartSentinel(t)
	ctx := t.Context()
	from, to := redistest.HeldWriteLost(t, top)
	c, n := redistest.Client(t, from), redistest.Client(t, to)
	// And back: the topology survives a second failover.
	if err := n.Set(ctx, "second", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	redistest.WaitSynced(t, top)
	start := time.Now()
	_, back, err := top.Failover(ctx, 20*time.Second)
	t.Logf("failover back in %v", time.Since(start).Round(time.Millisecond))
	if err != nil || back != from {
		t.Fatalf("second failover to %s, %v; want back to %s", back, err, from)
	}
	if got, err := c.Get(ctx, "second").Result(); err != nil || got != "1" {
		t.Errorf("after the second failover GET second = %q, %v", got, err)
	}
}
