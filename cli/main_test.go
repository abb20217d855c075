package cli

import (
	"os"
	"testing"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/mysqltest"
	"github.com/redis/go-redis/v9"
)

// TestMain: with LOCKBENCH_TEST_MAIN=1 the test binary is lockbench
// itself, for the tests that need a process of their own (signals). The
// MariaDB server the MySQL tests share is stopped at the end. go-redis's
// own log lines are dropped as main drops them, for the tests run the CLI
// in-process.
func TestMain(m *testing.M) {
	if os.Getenv("LOCKBENCH_TEST_MAIN") == "1" || harness.IsNode(os.Args[1:]) {
		// lockbench itself, or one of its nodes (--node-mode=process
		// starts this binary as "node").
		if os.Getenv(panicLocksEnv) == "1" {
			registerPanicLocks()
		}
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	redis.SetLogger(quietRedis{})
	os.Exit(mysqltest.Main(m))
}
