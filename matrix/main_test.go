package matrix_test

import (
	"context"
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/mysqltest"
	"github.com/redis/go-redis/v9"
)

// quietRedis drops go-redis's own log lines, as the CLI does.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// TestMain lets every cell of the truth table wait for its slots at once
// (truthParallel; go test's default is one test per core): the slots, not
// go test, bound how many run. The MariaDB server the MySQL cells share
// is stopped at the end.
func TestMain(m *testing.M) {
	if harness.IsNode(os.Args[1:]) {
		// A node of a process cell: this binary is its own node.
		os.Exit(harness.NodeMain(os.Args[2:], os.Stderr))
	}
	redis.SetLogger(quietRedis{})
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() == f.DefValue {
		f.Value.Set(strconv.Itoa(truthParallel()))
	}
	os.Exit(mysqltest.Main(m))
}
