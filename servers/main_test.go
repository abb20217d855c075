package servers_test

import (
	"os"
	"testing"

	"github.com/lockbench/lockbench/internal/etcdtest"
	"github.com/lockbench/lockbench/internal/pgtest"
)

// TestMain stops the shared etcd cluster and PostgreSQL, if they started.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(etcdRun{m})) }

// etcdRun runs the tests through etcdtest.Main.
type etcdRun struct{ m *testing.M }

func (r etcdRun) Run() int { return etcdtest.Main(r.m) }
