// Package servertest starts the servers lockbench starts itself (etcd,
// PostgreSQL) for tests: a test binary's shared server, started on first
// use and stopped by TestMain (Main), a test's own server, and the skip
// (or, when required, the failure) of a test whose server is not
// installed. Each kind is a Kind value: Etcd, Postgres.
package servertest

import (
	"context"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockbench/lockbench/servers"
)

// Etcd is three members of Debian's etcd on loopback
// (servers.StartEtcd); LOCKBENCH_REQUIRE_ETCD=1 makes its absence a
// failure (CI sets it after installing etcd-server).
var Etcd = &Kind[*servers.Etcd]{
	Title: "etcd", RequireEnv: "LOCKBENCH_REQUIRE_ETCD", Install: "apt-get install etcd-server",
	Available: servers.EtcdAvailable,
	Launch:    func(ctx context.Context) (*servers.Etcd, error) { return servers.StartEtcd(ctx) },
}

// Postgres is Debian's initdb and postgres on loopback
// (servers.StartPostgres); LOCKBENCH_REQUIRE_POSTGRES=1 makes its absence a
// failure (CI sets it after installing postgresql).
var Postgres = &Kind[*servers.Postgres]{
	Title: "PostgreSQL", RequireEnv: "LOCKBENCH_REQUIRE_POSTGRES", Install: "apt-get install postgresql",
	Available: servers.PostgresAvailable,
	Launch:    func(ctx context.Context) (*servers.Postgres, error) { return servers.StartPostgres(ctx) },
}

// Runner runs a test binary's tests: a *testing.M, or another helper's
// Main wrapped, so that one TestMain stops several shared servers.
type Runner interface{ Run() int }

// Main runs the tests and then stops the shared servers that started;
// call it from TestMain: os.Exit(servertest.Main(m)).
func Main(m Runner) int {
	code := m.Run()
	Etcd.stop()
	Postgres.stop()
	return code
}

// Kind is a kind of server tests start.
type Kind[T io.Closer] struct {
	// Title names the server in messages: "etcd".
	Title string
	// RequireEnv is the environment variable that, set to 1, turns a
	// missing server into a test failure instead of a skip.
	RequireEnv string
	// Install says how to install it: "apt-get install etcd-server".
	Install string
	// Available reports whether the server is installed.
	Available func() bool
	// Launch starts one.
	Launch func(ctx context.Context) (T, error)

	once   sync.Once
	shared T
	err    error
	ok     bool
}

// Need skips t, or fails it under RequireEnv, when the server is not
// installed.
func (k *Kind[T]) Need(t testing.TB) {
	t.Helper()
	if k.Available() {
		return
	}
	if os.Getenv(k.RequireEnv) == "1" {
		t.Fatalf("%s is not installed and %s=1: %s", k.Title, k.RequireEnv, k.Install)
	}
	t.Skipf("%s is not installed (%s); skipping real-%s test (set %s=1 to fail instead)", k.Title, k.Install, k.Title, k.RequireEnv)
}

// Start returns the test binary's shared server, starting it on first
// use. Tests must leave it running as they found it.
func (k *Kind[T]) Start(t testing.TB) T {
	t.Helper()
	k.Need(t)
	k.once.Do(func() {
		k.shared, k.err = k.Launch(context.Background())
		k.ok = k.err == nil
	})
	if k.err != nil {
		t.Fatalf("starting %s: %v", k.Title, k.err)
	}
	return k.shared
}

// Own starts a server for t alone, stopped when t ends.
func (k *Kind[T]) Own(t testing.TB) T {
	t.Helper()
	k.Need(t)
	v, err := k.Launch(t.Context())
	if err != nil {
		t.Fatalf("starting %s: %v", k.Title, err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// stop stops the shared server, if one started.
func (k *Kind[T]) stop() {
	if k.ok {
		k.shared.Close()
	}
}

// PostgresUser makes p, a server of the test's own (Postgres.Own), a
// user's: it creates the role user with password, owning a database db,
// and makes every connection but the user postgres's (lockbench's
// levers) authenticate with SCRAM, and returns the user's DSN. A run
// given that DSN reaches the server only if it carries the user, the
// password and the database whole.
func PostgresUser(t testing.TB, p *servers.Postgres, user, password, db string) string {
	t.Helper()
	ctx := t.Context()
	c, err := pgx.Connect(ctx, p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, q := range []struct{ what, sql string }{
		{"create role " + user, "CREATE ROLE " + pgx.Identifier{user}.Sanitize() + " LOGIN PASSWORD '" + strings.ReplaceAll(password, "'", "''") + "'"},
		{"create database " + db, "CREATE DATABASE " + pgx.Identifier{db}.Sanitize() + " OWNER " + pgx.Identifier{user}.Sanitize()},
	} {
		// The statement itself carries the password: only what it does
		// is named.
		if _, err := c.Exec(ctx, q.sql); err != nil {
			t.Fatalf("%s: %v", q.what, err)
		}
	}
	var hba string
	if err := c.QueryRow(ctx, "SHOW hba_file").Scan(&hba); err != nil {
		t.Fatal(err)
	}
	rules := "host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(hba, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	dsn := (&url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: p.Addr(), Path: "/" + db, RawQuery: "sslmode=disable"}).String()
	// The reload is a signal the server acts on in its own time: wait
	// until a wrong password is refused.
	wrong := (&url.URL{Scheme: "postgres", User: url.UserPassword(user, password+"-wrong"), Host: p.Addr(), Path: "/" + db, RawQuery: "sslmode=disable"}).String()
	for range 200 {
		w, err := pgx.Connect(ctx, wrong)
		if err != nil {
			return dsn
		}
		w.Close(ctx)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("PostgreSQL at %s still lets %s in with a wrong password after reloading %s", p.Addr(), user, hba)
	return ""
}
