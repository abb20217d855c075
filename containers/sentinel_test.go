package containers_test

import (
	"os"
	"testing"
	"time"

	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/internal/dockertest"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/sentinels"
)

// TestSentinelTopology runs the failover topology in containers: five of
// them (a primary, a replica, three Sentinels) behind lockbench's relays;
// a write acknowledged while replication was held is gone from the
// replica the Sentinels promote once the primary is docker-paused, and
// Close leaves no container.
func TestSentinelTopology(t *testing.T) {
	image := dockertest.RedisImage(t)
	ctx := t.Context()
	starter, err := containers.SentinelStarter(ctx, image)
	if err != nil {
		t.Fatal(err)
	}
	top, err := sentinels.StartWith(ctx, starter)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			top.Close()
		}
	})
	if got := len(dockertest.Leftovers(t, os.Getpid())); got != 5 {
		t.Errorf("%d containers run, want 5 (2 servers, 3 Sentinels)", got)
	}
	if got, want := top.Where(), "in docker ("+image+")"; got != want {
		t.Errorf("Where() = %q, want %q", got, want)
	}
	from, err := top.PrimaryAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := redistest.Client(t, from)
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitSynced(t, top)
	top.HoldReplication(true)
	if err := c.Set(ctx, "held", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if has, err := top.ReplicaHas(ctx, "held"); err != nil || has {
		t.Fatalf("replica has the held write: %v, %v", has, err)
	}
	start := time.Now()
	old, to, err := top.Failover(ctx, 20*time.Second)
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
	if got, err := c.Exists(ctx, "held").Result(); err != nil || got != 0 {
		t.Errorf("on the old primary, now a replica, EXISTS held = %d, %v; want 0", got, err)
	}
	closed = true
	if err := top.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after Close: %v", ids)
	}
}

func waitSynced(t *testing.T, top *sentinels.Topology) {
	t.Helper()
	for range 250 {
		if ok, _ := top.Synced(t.Context()); ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("replica never in sync")
}
