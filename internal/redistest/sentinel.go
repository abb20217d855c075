package redistest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/lockbench/lockbench/sentinels"
)

// RequireSentinelEnv is the environment variable that, set to 1, turns a
// missing redis-server or redis-sentinel into a test failure instead of
// a skip.
const RequireSentinelEnv = "LOCKBENCH_REQUIRE_SENTINEL"

// SentinelAvailable reports whether the failover topology can start here:
// redis-server and redis-sentinel on PATH.
func SentinelAvailable() bool {
	_, err := exec.LookPath("redis-sentinel")
	return err == nil && Available()
}

// StartSentinel starts the failover topology of package sentinels (a
// primary, a replica replicating through a relay that can hold it back,
// three Sentinels) on free loopback ports and stops it when the test
// ends. Without redis-server or redis-sentinel on PATH the test is
// skipped, or fails when LOCKBENCH_REQUIRE_SENTINEL=1.
func StartSentinel(t testing.TB) *sentinels.Topology {
	t.Helper()
	if !SentinelAvailable() {
		if os.Getenv(RequireSentinelEnv) == "1" {
			t.Fatalf("redis-server or redis-sentinel is not on PATH and %s=1: install them (apt-get install redis-server redis-sentinel)", RequireSentinelEnv)
		}
		t.Skipf("redis-server or redis-sentinel is not on PATH (apt-get install redis-server redis-sentinel); skipping the failover test (set %s=1 to fail instead)", RequireSentinelEnv)
	}
	top, err := sentinels.Start(context.Background())
	if err != nil {
		t.Fatalf("starting the Sentinel topology: %v", err)
	}
	t.Cleanup(func() { top.Close() })
	return top
}

// HeldWriteLost makes one failover of top happen and checks what it
// loses: a write the primary acknowledged while replication was held is
// on neither the replica the Sentinels promote nor the old primary (now
// its replica), and a write made before the hold is on the new primary.
// It returns the old and the new primary's addresses. The tests of the
// topology on processes and in containers share it.
func HeldWriteLost(t *testing.T, top *sentinels.Topology) (from, to string) {
	t.Helper()
	ctx := t.Context()
	from, err := top.PrimaryAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := Client(t, from)
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	WaitSynced(t, top)
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
	if got, err := Client(t, to).Exists(ctx, "before", "held").Result(); err != nil || got != 1 {
		t.Errorf("on the new primary EXISTS before held = %d, %v; want 1 (before only)", got, err)
	}
	// The old primary is a replica now, with the new primary's data.
	if got, err := c.Exists(ctx, "held").Result(); err != nil || got != 0 {
		t.Errorf("on the old primary, now a replica, EXISTS held = %d, %v; want 0", got, err)
	}
	return from, to
}

// WaitSynced waits until top's replica has caught up with its primary,
// and fails the test after five seconds.
func WaitSynced(t *testing.T, top *sentinels.Topology) {
	t.Helper()
	for range 250 {
		if ok, _ := top.Synced(t.Context()); ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("replica never in sync")
}
