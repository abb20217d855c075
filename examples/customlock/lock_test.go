package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/reports"
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
			servers, err := backends.Open(t.Context(), backends.Options{}, im.Needs())
			if err != nil {
				t.Fatal(err)
			}
			defer servers.Close()
			w := harness.Defaults()
			w.Clients, w.Stock, w.Ramp, w.Workers, w.TTL = 400, 300, 500*time.Millisecond, 20, 200*time.Millisecond
			res, err := harness.Run(t.Context(), &servers.Set, harness.Plan{Impl: im, Workload: w, Faults: specs, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			run := reports.NewRun(res.History, res.Report, res.NotFired...)
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
// through the command line this example builds: their rows hold. A cell
// may differ only where the product says it could not judge: its
// liveness inconclusive because the harness measured itself saturated
// (a busy machine), its lock and data safety as the truth table wants.
func TestTheirRowsInTheMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the matrix runs four sales")
	}
	setup(t)
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	code := cli.Main([]string{"matrix", "--impl=example-correct,example-broken", "--seed=1", "--out=" + dir}, &out, &errOut)
	if code == 0 {
		if !strings.Contains(out.String(), "4 cells, 4 as expected, 0 differ") {
			t.Errorf("matrix output:\n%s", out.String())
		}
		return
	}
	f, err := os.Open(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatalf("matrix: exit %d and no result (%v)\n%s%s", code, err, out.String(), errOut.String())
	}
	defer f.Close()
	res, err := reports.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matrix) != 4 {
		t.Fatalf("matrix: exit %d, %d cells, want 4\n%s%s", code, len(res.Matrix), out.String(), errOut.String())
	}
	for _, c := range res.Matrix {
		if c.Match {
			continue
		}
		if !unjudged(c) {
			t.Errorf("cell %s: measured %q, want %q (liveness %s, saturation %v)\n%s", c.Cell, c.Measured, c.Expected, c.Run.Liveness.Status, c.Run.Saturation, out.String())
			continue
		}
		t.Logf("cell %s: liveness inconclusive on a saturated harness: %v", c.Cell, c.Run.Saturation)
	}
}

// unjudged reports whether a cell that differs does so only because its
// liveness went unjudged on a harness the product measured saturated: the
// rest of the run is the truth table's, so it would have matched with
// liveness judged either way.
func unjudged(c reports.MatrixCell) bool {
	if c.Run.Liveness.Status != checker.Inconclusive || len(c.Run.Saturation) == 0 || c.Measured == matrix.NotFired {
		return false
	}
	cell, ok := matrix.Lookup(c.Cell)
	if !ok {
		return false
	}
	for _, live := range []checker.Status{checker.OK, checker.Violated} {
		r := c.Run
		r.Liveness.Status = live
		if cell.Want.Meets(&r) {
			return true
		}
	}
	return false
}

// TestList: lockbench list names them.
func TestList(t *testing.T) {
	setup(t)
	var out bytes.Buffer
	if code := cli.Main([]string{"list"}, &out, os.Stderr); code != 0 || !strings.Contains(out.String(), "example-broken") {
		t.Errorf("list: exit %d\n%s", code, out.String())
	}
}
