package redistest

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/lockbench/lockbench/sentinels"
)

// RequireSentinelEnv is the environment variable that, set to 1, turns a
// missing redis-server or redis-sentinel into a test failure instead of
// a skip.
const RequireSentinelEnv = "LOCKBENCH_REQUIRE_SENTINEL"

// SentinelAvailable reports whether the failover topology can start here:
// redis-server and redis-sentinel on PATH.
func SentinelAvailable() bool {
	_, err := exec.LookPath("redis-sentinel")
	return err == nil && Available()
}

// StartSentinel starts the failover topology of package sentinels (a
// primary, a replica replicating through a relay that can hold it back,
// three Sentinels) on free loopback ports and stops it when the test
// ends. Without redis-server or redis-sentinel on PATH the test is
// skipped, or fails when LOCKBENCH_REQUIRE_SENTINEL=1.
func StartSentinel(t testing.TB) *sentinels.Topology {
	t.Helper()
	if !SentinelAvailable() {
		if os.Getenv(RequireSentinelEnv) == "1" {
			t.Fatalf("redis-server or redis-sentinel is not on PATH and %s=1: install them (apt-get install redis-server redis-sentinel)", RequireSentinelEnv)
		}
		t.Skipf("redis-server or redis-sentinel is not on PATH (apt-get install redis-server redis-sentinel); skipping the failover test (set %s=1 to fail instead)", RequireSentinelEnv)
	}
	top, err := sentinels.Start(context.Background())
	if err != nil {
		t.Fatalf("starting the Sentinel topology: %v", err)
	}
	t.Cleanup(func() { top.Close() })
	return top
}
