package matrix_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/mysqltest"
	"github.com/redis/go-redis/v9"
)

// quietRedis drops go-redis's own log lines, as the CLI does.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// TestMain runs four subtests at once (the default is one per core): the
// truth table's cells spend most of their time waiting on faults and
// leases, not on the processor. The MariaDB server the MySQL cells share
// is stopped at the end.
func TestMain(m *testing.M) {
	if harness.IsNode(os.Args[1:]) {
		// A node of a process cell: this binary is its own node.
		os.Exit(harness.NodeMain(os.Args[2:], os.Stderr))
	}
	redis.SetLogger(quietRedis{})
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() == f.DefValue {
		f.Value.Set("4")
	}
	os.Exit(mysqltest.Main(m))
}
