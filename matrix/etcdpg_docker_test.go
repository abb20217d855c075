package matrix_test

import (
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

// TestServerFaultsInDocker runs truth-table cells whose server faults
// act on etcd and PostgreSQL in containers (--backend=docker): the
// leader's container paused (docker pause) and killed and started again
// on its data, under etcd-txn; PostgreSQL's container paused under
// pg-advisory. Each is judged as the table expects on the processes
// lockbench starts: the fault fires, and no second holder gets in; and
// closing the servers leaves no container behind.
func TestServerFaultsInDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: sales with server faults in containers")
	}
	etcd, pg := dockertest.EtcdImage(t), dockertest.PostgresImage(t)
	o := backends.Options{Backend: backends.BackendDocker, EtcdImage: etcd, PostgresImage: pg, Docker: containers.Docker{}}
	s, err := backends.Open(t.Context(), o, servers.Needs{servers.KindEtcd, servers.KindPostgres})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	for _, want := range []string{"in docker (" + etcd + ")", "in docker (" + pg + ")"} {
		if name := s.Names(); !strings.Contains(name, want) {
			t.Errorf("servers %q do not say %q", name, want)
		}
	}
	for _, name := range []string{"etcd-txn/server-pause", "etcd-txn/restart", "pg-advisory/server-pause"} {
		t.Run(name, func(t *testing.T) {
			cell, ok := matrix.Lookup(name)
			if !ok {
				t.Fatalf("no %s cell in the truth table", name)
			}
			base := harness.Plan{Workload: matrix.Defaults(), Seed: 1}
			base.Workload.Prefix = "lockbench-test:docker:" + strings.ReplaceAll(name, "/", ":") + ":"
			mc, err := matrix.RunCell(t.Context(), &s.Set, cell, matrix.Options{Base: base})
			if err != nil {
				t.Fatal(err)
			}
			r := &mc.Run
			t.Logf("measured %s (sold %d/%d, overlaps %d, faults fired %d)", mc.Measured, r.Sold, r.Stock, r.Lock.Overlaps, len(r.Faults))
			if len(r.Faults) == 0 {
				t.Errorf("the fault never fired: %v", r.NotFired)
			}
			if !cell.Want.Meets(r) {
				t.Errorf("measured %s, want %s\n%s", mc.Measured, cell.Want.Label, strings.Join(r.Reasons, "\n"))
			}
		})
	}
	closed = true
	s.Close()
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after Close: %v", ids)
	}
}
