// Package etcdtest starts etcd clusters for tests (servers.StartEtcd:
// three members of Debian's etcd on loopback). A test binary shares one
// cluster (Start), stopped by Main; a test that pauses, kills or stops
// members starts its own (Own). Without the etcd binary tests skip,
// unless LOCKBENCH_REQUIRE_ETCD=1 makes its absence a failure (CI sets it
// after installing etcd-server).
package etcdtest

import (
	"os"
	"sync"
	"testing"

	"github.com/lockbench/lockbench/servers"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// etcd into a test failure instead of a skip.
const RequireEnv = "LOCKBENCH_REQUIRE_ETCD"

var (
	shared    *servers.Etcd
	sharedErr error
	once      sync.Once
)

// Need skips t, or fails it under RequireEnv, when etcd is missing.
func Need(t testing.TB) {
	t.Helper()
	if servers.EtcdAvailable() {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("etcd is not installed and %s=1: apt-get install etcd-server", RequireEnv)
	}
	t.Skipf("etcd is not installed (apt-get install etcd-server); skipping real-etcd test (set %s=1 to fail instead)", RequireEnv)
}

// Start returns the test binary's shared cluster, starting it on first
// use. Tests must leave its members running.
func Start(t testing.TB) *servers.Etcd {
	t.Helper()
	Need(t)
	once.Do(func() { shared, sharedErr = servers.StartEtcd(t.Context()) })
	if sharedErr != nil {
		t.Fatalf("starting etcd: %v", sharedErr)
	}
	return shared
}

// Own starts a cluster for t alone, stopped when t ends.
func Own(t testing.TB) *servers.Etcd {
	t.Helper()
	Need(t)
	e, err := servers.StartEtcd(t.Context())
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Main runs the tests and then stops the shared cluster, if one started;
// call it from TestMain, with the *testing.M: os.Exit(etcdtest.Main(m)).
func Main(m Runner) int {
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	return code
}

// Runner runs a test binary's tests: a *testing.M, or another helper's
// Main wrapped, so that one TestMain stops several shared servers.
type Runner interface{ Run() int }
