package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
)

var registered sync.Once

func setup(t *testing.T) {
	t.Helper()
	registered.Do(func() {
		if err := register(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPauseNoLeaseCanSurvive runs a sale of each lock from go test, the
// way a team would gate their own lock: a holder paused past its lease
// lets a second holder in with both; the correct lock's store refuses the
// stale write, the broken one sells units twice.
func TestPauseNoLeaseCanSurvive(t *testing.T) {
	setup(t)
	specs, err := faults.Parse("pause-holder")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		impl string
		safe bool // the data stays safe
	}{
		{"example-correct", true},
		{"example-broken", false},
	}
	for _, tt := range tests {
		t.Run(tt.impl, func(t *testing.T) {
			im, ok := harness.Lookup(tt.impl)
			if !ok {
				t.Fatalf("%s is not registered", tt.impl)
			}
			// The embedded server: nothing to install.
			servers, err := harness.Open(t.Context(), harness.ServerOptions{}, im.Needs())
			if err != nil {
				t.Fatal(err)
			}
			defer servers.Close()
			w := harness.Defaults()
			w.Clients, w.Stock, w.Ramp, w.Workers, w.TTL = 400, 300, 500*time.Millisecond, 20, 200*time.Millisecond
			run, _, err := harness.Run(t.Context(), &servers.Servers, harness.Plan{Impl: im, Workload: w, Faults: specs, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(run.Faults) == 0 {
				t.Fatal("pause-holder never fired")
			}
			if run.Lock.Status != checker.Violated {
				t.Errorf("lock safety %s: a pause past the lease must let a second holder in", run.Lock.Status)
			}
			safe := run.Data.Status == checker.OK && run.Oversold == 0
			if safe != tt.safe {
				t.Errorf("data safety %s, oversold %d; want the data safe: %v\n%s", run.Data.Status, run.Oversold, tt.safe, strings.Join(run.Reasons, "\n"))
			}
		})
	}
}

// TestTheirRowsInTheMatrix runs lockbench's own matrix on the two locks
// through the command line this example builds: their rows hold.
func TestTheirRowsInTheMatrix(t *testing.T) {
	setup(t)
	var out, errOut bytes.Buffer
	code := cli.Main([]string{"matrix", "--impl=example-correct,example-broken", "--seed=1", "--out=" + t.TempDir()}, &out, &errOut)
	if code != 0 {
		t.Fatalf("matrix: exit %d, want 0 (every cell as expected)\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "4 cells, 4 as expected, 0 differ") {
		t.Errorf("matrix output:\n%s", out.String())
	}
}

// TestList: lockbench list names them.
func TestList(t *testing.T) {
	setup(t)
	var out bytes.Buffer
	if code := cli.Main([]string{"list"}, &out, os.Stderr); code != 0 || !strings.Contains(out.String(), "example-broken") {
		t.Errorf("list: exit %d\n%s", code, out.String())
	}
}
