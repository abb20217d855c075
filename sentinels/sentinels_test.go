package sentinels_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/sentinels"
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

// TestPingProcess: a start is told its own server from another that took
// its port first: the server that answers is checked by its process id,
// and another's answer is ErrExited (try another port).
func TestPingProcess(t *testing.T) {
	addr := redistest.Start(t)
	c := redistest.Client(t, addr)
	info, err := c.Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(info, "process_id:")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if err != nil {
		t.Fatalf("no process_id in INFO server: %v", err)
	}
	if err := sentinels.PingProcess(t.Context(), addr, pid); err != nil {
		t.Errorf("the server's own process %d: %v", pid, err)
	}
	if err := sentinels.PingProcess(t.Context(), addr, pid+1); !errors.Is(err, sentinels.ErrExited) {
		t.Errorf("another process's start on the same port: %v, want ErrExited", err)
	}
}
