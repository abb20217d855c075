// Package etcdtest starts etcd clusters for tests (servers.StartEtcd:
// three members of Debian's etcd on loopback). A test binary shares one
// cluster (Start), stopped by Main; a test that pauses, kills or stops
// members starts its own (Own). Without the etcd binary tests skip,
// unless LOCKBENCH_REQUIRE_ETCD=1 makes its absence a failure (CI sets it
// after installing etcd-server).
package etcdtest

import (
	"context"
	"testing"

	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/servers"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// etcd into a test failure instead of a skip.
const RequireEnv = "LOCKBENCH_REQUIRE_ETCD"

var kind = servertest.Kind[*servers.Etcd]{
	Title: "etcd", RequireEnv: RequireEnv, Install: "apt-get install etcd-server",
	Available: servers.EtcdAvailable,
	Launch:    func(ctx context.Context) (*servers.Etcd, error) { return servers.StartEtcd(ctx) },
}

// Need skips t, or fails it under RequireEnv, when etcd is missing.
func Need(t testing.TB) { t.Helper(); kind.Need(t) }

// Start returns the test binary's shared cluster, starting it on first
// use. Tests must leave its members running.
func Start(t testing.TB) *servers.Etcd { t.Helper(); return kind.Start(t) }

// Own starts a cluster for t alone, stopped when t ends.
func Own(t testing.TB) *servers.Etcd { t.Helper(); return kind.Own(t) }

// Main runs the tests and then stops the shared cluster, if one started;
// call it from TestMain, with the *testing.M: os.Exit(etcdtest.Main(m)).
func Main(m servertest.Runner) int { return kind.Main(m) }
