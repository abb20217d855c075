package workload_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockbench/lockbench/workload"
)

// TestMySQLUnreachable: a server that does not answer is ErrUnreachable,
// within the dial bound.
func TestMySQLUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := workload.DialMySQL(ctx, "root@tcp(127.0.0.1:1)/")
	if !errors.Is(err, workload.ErrUnreachable) {
		t.Errorf("DialMySQL on a closed port: error %v, want ErrUnreachable", err)
	}
}
