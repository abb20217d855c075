package containers_test

import (
	"os"
	"testing"

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
	redistest.HeldWriteLost(t, top)
	closed = true
	if err := top.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after Close: %v", ids)
	}
}
