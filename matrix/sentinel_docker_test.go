package matrix_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/dockertest"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/servers"
)

// TestFailoverInDocker runs the truth table's lua/failover cell on the
// Sentinel topology in containers (--backend=sentinel --sentinel-docker):
// the failover, with the primary frozen by docker pause, lets a second
// holder in on at least one of failoverSeeds seeds, as the cell expects
// (FailoverOverlap: most runs, not every one), and closing the servers
// leaves no container behind.
func TestFailoverInDocker(t *testing.T) {
	image := dockertest.RedisImage(t)
	cell, ok := matrix.Lookup("lua/failover")
	if !ok {
		t.Fatal("no lua/failover cell in the truth table")
	}
	o := backends.Options{Backend: backends.BackendSentinel, SentinelDocker: true, RedisImage: image, Docker: containers.Docker{}}
	s, err := backends.Open(t.Context(), o, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	if name, want := s.Names(), "in docker ("+image+")"; !strings.Contains(name, want) {
		t.Errorf("backend %q does not say %q", name, want)
	}
	base := harness.Plan{Workload: matrix.Defaults()}
	seen := 0
	for seed := uint64(1); seed <= failoverSeeds && seen == 0; seed++ {
		base.Seed = seed
		base.Workload.Prefix = fmt.Sprintf("lockbench-test:docker:%d:", seed)
		mc, err := matrix.RunCell(t.Context(), &s.Set, cell, matrix.Options{Base: base})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		t.Logf("seed %d: measured %s (sold %d/%d, overlaps %d, faults fired %d)", seed, mc.Measured, mc.Run.Sold, mc.Run.Stock, mc.Run.Lock.Overlaps, len(mc.Run.Faults))
		if cell.Want.Meets(&mc.Run) {
			seen++
		}
	}
	if seen == 0 {
		t.Errorf("%s in docker: no run in %d seeds showed %s", cell.Name(), failoverSeeds, cell.Want.Label)
	}
	closed = true
	s.Close()
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after Close: %v", ids)
	}
}
