package servers_test

import (
	"os"
	"testing"

	"github.com/lockbench/lockbench/internal/etcdtest"
)

// TestMain stops the shared etcd cluster, if one started.
func TestMain(m *testing.M) { os.Exit(etcdtest.Main(m)) }
