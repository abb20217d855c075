// Package pgtest starts PostgreSQL servers for tests
// (servers.StartPostgres: Debian's initdb and postgres on loopback). A
// test binary shares one server (Start), stopped by Main; a test that
// pauses or restarts it starts its own (Own). Without the binaries tests
// skip, unless LOCKBENCH_REQUIRE_PG=1 makes their absence a failure (CI
// sets it after installing postgresql).
package pgtest

import (
	"os"
	"sync"
	"testing"

	"github.com/lockbench/lockbench/servers"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// PostgreSQL into a test failure instead of a skip.
const RequireEnv = "LOCKBENCH_REQUIRE_PG"

var (
	shared    *servers.Postgres
	sharedErr error
	once      sync.Once
)

// Need skips t, or fails it under RequireEnv, when PostgreSQL is missing.
func Need(t testing.TB) {
	t.Helper()
	if servers.PostgresAvailable() {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("PostgreSQL is not installed in %s and %s=1: apt-get install postgresql", servers.PostgresBinDir, RequireEnv)
	}
	t.Skipf("PostgreSQL is not installed in %s (apt-get install postgresql); skipping real-PostgreSQL test (set %s=1 to fail instead)", servers.PostgresBinDir, RequireEnv)
}

// Start returns the test binary's shared server, starting it on first
// use. Tests must leave it running.
func Start(t testing.TB) *servers.Postgres {
	t.Helper()
	Need(t)
	once.Do(func() { shared, sharedErr = servers.StartPostgres(t.Context()) })
	if sharedErr != nil {
		t.Fatalf("starting PostgreSQL: %v", sharedErr)
	}
	return shared
}

// Own starts a server for t alone, stopped when t ends.
func Own(t testing.TB) *servers.Postgres {
	t.Helper()
	Need(t)
	p, err := servers.StartPostgres(t.Context())
	if err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Main runs the tests and then stops the shared server, if one started;
// call it from TestMain, with the *testing.M: os.Exit(pgtest.Main(m)).
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
