// Package pgtest starts PostgreSQL servers for tests
// (servers.StartPostgres: Debian's initdb and postgres on loopback). A
// test binary shares one server (Start), stopped by Main; a test that
// pauses or restarts it starts its own (Own). Without the binaries tests
// skip, unless LOCKBENCH_REQUIRE_PG=1 makes their absence a failure (CI
// sets it after installing postgresql).
package pgtest

import (
	"context"
	"testing"

	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/servers"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// PostgreSQL into a test failure instead of a skip.
const RequireEnv = "LOCKBENCH_REQUIRE_PG"

var kind = servertest.Kind[*servers.Postgres]{
	Title: "PostgreSQL", RequireEnv: RequireEnv, Install: "apt-get install postgresql",
	Available: servers.PostgresAvailable,
	Launch:    func(ctx context.Context) (*servers.Postgres, error) { return servers.StartPostgres(ctx) },
}

// Need skips t, or fails it under RequireEnv, when PostgreSQL is missing.
func Need(t testing.TB) { t.Helper(); kind.Need(t) }

// Start returns the test binary's shared server, starting it on first
// use. Tests must leave it running.
func Start(t testing.TB) *servers.Postgres { t.Helper(); return kind.Start(t) }

// Own starts a server for t alone, stopped when t ends.
func Own(t testing.TB) *servers.Postgres { t.Helper(); return kind.Own(t) }

// Main runs the tests and then stops the shared server, if one started;
// call it from TestMain, with the *testing.M: os.Exit(pgtest.Main(m)).
func Main(m servertest.Runner) int { return kind.Main(m) }
