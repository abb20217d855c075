package sentinels_test

import (
	"context"
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
	from, err := top.PrimaryAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := redistest.Client(t, from)
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, top.Synced)
	top.HoldReplication(true)
	if err := c.Set(ctx, "held", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Do(ctx, "WAIT", 1, 200).Int64(); err != nil || got != 0 {
		t.Errorf("WAIT 1 200 while held = %d, %v; want 0 replicas", got, err)
	}
	if has, err := top.ReplicaHas(ctx, "held"); err != nil || has {
		t.Fatalf("replica has the held write: %v, %v", has, err)
	}
	start := time.Now()
	old, to, err := top.Failover(ctx, 20*time.Second)
	top.HoldReplication(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover %s → %s in %v", old, to, time.Since(start).Round(time.Millisecond))
	if old != from || to == from {
		t.Fatalf("failover from %s to %s; want away from %s", old, to, from)
	}
	n := redistest.Client(t, to)
	if got, err := n.Exists(ctx, "before", "held").Result(); err != nil || got != 1 {
		t.Errorf("on the new primary EXISTS before held = %d, %v; want 1 (before only)", got, err)
	}
	// The old primary is a replica now, with the new primary's data.
	if got, err := c.Exists(ctx, "held").Result(); err != nil || got != 0 {
		t.Errorf("on the old primary EXISTS held = %d, %v; want 0", got, err)
	}
	// And back: the topology survives a second failover.
	if err := n.Set(ctx, "second", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, top.Synced)
	start = time.Now()
	_, back, err := top.Failover(ctx, 20*time.Second)
	t.Logf("failover back in %v", time.Since(start).Round(time.Millisecond))
	if err != nil || back != from {
		t.Fatalf("second failover to %s, %v; want back to %s", back, err, from)
	}
	if got, err := c.Get(ctx, "second").Result(); err != nil || got != "1" {
		t.Errorf("after the second failover GET second = %q, %v", got, err)
	}
}

func waitSynced(t *testing.T, synced func(context.Context) (bool, error)) {
	t.Helper()
	for range 250 {
		if ok, _ := synced(t.Context()); ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("replica never in sync")
}
