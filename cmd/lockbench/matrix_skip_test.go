package main

import (
	"context"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/workload"
	"github.com/redis/go-redis/v9"
)

// unpausable hides the Pause and Restart of the backend it wraps: a
// server lockbench cannot pause.
type unpausable struct{ workload.Backend }

// TestMatrixWithNoCellRunIsNotAPass: a matrix whose every cell was skipped
// measured nothing, and must not exit 0 as if every cell matched.
func TestMatrixWithNoCellRunIsNotAPass(t *testing.T) {
	var o runOpts
	fs := matrixFlags(&o)
	if err := fs.Parse([]string{"--seed=1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.validate(fs); err != nil {
		t.Fatal(err)
	}
	cells := []faults.Cell{{Impl: "atomic", Fault: "server-pause", Want: faults.Safe}}
	var result reports.Result
	var stderr strings.Builder
	err := o.runCells(t.Context(), &result, cells, unpausable{newBackend(t, "embedded")}, nil, &stderr)
	if !isUsage(err) {
		t.Fatalf("every cell skipped: err %v, want a usage error", err)
	}
	if !strings.Contains(stderr.String(), "atomic/server-pause skipped") || !strings.Contains(err.Error(), "atomic/server-pause") {
		t.Errorf("the skip is not said: stderr %q, err %v", stderr.String(), err)
	}
	if len(result.Matrix) != 0 {
		t.Errorf("matrix holds %d cells, want none", len(result.Matrix))
	}
}

// TestMatrixPrefixInUseIsNotSkipped: a key prefix already in use on a real
// Redis stops every cell; the matrix must refuse (exit 2), not skip each
// cell and report "0 cells, 0 differ" with exit 0 and an empty JUnit.
func TestMatrixPrefixInUseIsNotSkipped(t *testing.T) {
	addr := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	if err := c.Set(context.Background(), "lockbench:atomic:leftover", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := lockbench(t, "matrix", "--impl=atomic", "--faults=none", "--redis="+addr, "--seed=1")
	if code != exitUsage {
		t.Errorf("exit %d, want %d\n%s%s", code, exitUsage, out, errOut)
	}
	if !strings.Contains(errOut, "--prefix") || strings.Contains(errOut, "skipped") {
		t.Errorf("stderr does not refuse with the prefix's reason:\n%s", errOut)
	}
	if strings.Contains(out, "0 differ") {
		t.Errorf("a matrix that ran nothing printed a verdict:\n%s", out)
	}
}
