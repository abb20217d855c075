package servers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"
)

// TestMySQLUnreachable: a server that does not answer is ErrUnreachable,
// within the dial bound.
func TestMySQLUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := servers.DialMySQL(ctx, "root@tcp(127.0.0.1:1)/")
	if !errors.Is(err, servers.ErrUnreachable) {
		t.Errorf("DialMySQL on a closed port: error %v, want servers.ErrUnreachable", err)
	}
}
