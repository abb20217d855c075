package harness

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/workload"
)

// TestMain serves a node when the test binary is started as one: the
// process-mode tests launch this binary as their nodes.
func TestMain(m *testing.M) {
	if IsNode(os.Args[1:]) {
		os.Exit(NodeMain(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// processPlan is a small sale of impl on nodes in processes of their own.
func processPlan(t *testing.T, impl string, clients int) Plan {
	t.Helper()
	im, ok := Lookup(impl)
	if !ok {
		t.Fatalf("no %s", impl)
	}
	l, err := NodeProcesses()
	if err != nil {
		t.Fatal(err)
	}
	w := Defaults()
	w.Clients, w.Stock, w.Nodes, w.Workers, w.Ramp, w.Timeout = clients, int64(clients/4), 2, 50, 200*time.Millisecond, time.Minute
	return Plan{Impl: im, Workload: w, Seed: 1, Nodes: Nodes{Launcher: l}}
}

func TestProcessNodesSmoke(t *testing.T) {
	s, err := Open(t.Context(), ServerOptions{Backend: BackendEmbedded}, workload.NeedsRedis)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, h, err := Run(ctx, &s.Servers, processPlan(t, "watchdog", 400))
	if err != nil {
		t.Fatal(err)
	}
	if run.Verdict != reports.Pass {
		t.Fatalf("watchdog on process nodes failed: %+v", run.Reasons)
	}
	nodes := map[int16]int{}
	for _, op := range h.Ops {
		nodes[op.Node]++
		if op.Outcome == history.Pending {
			t.Fatalf("pending op %+v", op)
		}
	}
	t.Logf("ops per node %v, sold %d", nodes, run.Data.Sold)
}
