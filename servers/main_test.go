package servers_test

import (
	"os"
	"testing"

	"github.com/lockbench/lockbench/internal/servertest"
)

// TestMain stops the shared etcd cluster and PostgreSQL, if they started.
func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }
