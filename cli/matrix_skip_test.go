package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/redistest"
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
