package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/reports"
	"github.com/redis/go-redis/v9"
)

// TestMatrixWithNoCellRunIsNotAPass: a matrix whose every cell was skipped
// measured nothing, and must not exit 0 as if every cell matched. Three
// redis-servers reached by address cannot be restarted, so redlock's
// restart cell is skipped.
func TestMatrixWithNoCellRunIsNotAPass(t *testing.T) {
	addrs := strings.Join([]string{redistest.Start(t), redistest.Start(t), redistest.Start(t)}, ",")
	code, out, errOut := lockbench(t, "matrix", "--impl=redlock", "--faults=restart", "--redis="+addrs, "--seed=1")
	if code != exitUsage {
		t.Fatalf("every cell skipped: exit %d, want %d\n%s%s", code, exitUsage, out, errOut)
	}
	if !strings.Contains(errOut, "redlock/restart skipped") || !strings.Contains(errOut, "no cell of the matrix can run") {
		t.Errorf("the skip is not said:\n%s", errOut)
	}
	if strings.Contains(out, "differ") {
		t.Errorf("a matrix that ran nothing printed a verdict:\n%s", out)
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

// TestMatrixEndedByAnErrorKeepsTheCellsDone: a matrix that an error ends
// after some cells still writes them (result.json marked incomplete, the
// report, JUnit) and says so, then exits as the error says. lua/none runs
// first; atomic/none finds its key prefix in use and ends the matrix.
func TestMatrixEndedByAnErrorKeepsTheCellsDone(t *testing.T) {
	addr := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	if err := c.Set(context.Background(), "lockbench:atomic:leftover", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	code, out, errOut := lockbench(t, "matrix", "--impl=lua,atomic", "--faults=none", "--redis="+addr, "--seed=1",
		"--clients=100", "--stock=50", "--out="+dir, "--junit="+junit)
	if code != exitUsage {
		t.Errorf("exit %d, want %d (the prefix in use)\n%s%s", code, exitUsage, out, errOut)
	}
	if !strings.Contains(errOut, "--prefix") || !strings.Contains(out, "INCOMPLETE (ended by an error after 1 of 2 cells") {
		t.Errorf("the matrix does not say it is incomplete, or why:\n%s%s", out, errOut)
	}
	res, err := reports.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matrix) != 1 || res.Matrix[0].Cell != "lua/none" || !strings.Contains(res.Incomplete, "ended by an error") {
		t.Errorf("result.json: %d cells, incomplete %q; want lua/none, incomplete", len(res.Matrix), res.Incomplete)
	}
	if _, err := os.Stat(filepath.Join(dir, res.Matrix[0].Run.History)); err != nil {
		t.Errorf("the cell's history: %v", err)
	}
	for _, f := range []string{junit, filepath.Join(dir, "report.html")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "lua/none") {
			t.Errorf("%s lacks the cell done", f)
		}
	}
}
