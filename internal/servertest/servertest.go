// Package servertest is what the test helpers of servers lockbench
// starts itself (internal/etcdtest, internal/pgtest) have in common: a
// test binary's shared server, started on first use and stopped by
// TestMain, a test's own server, and the skip (or, when required, the
// failure) of a test whose server is not installed.
package servertest

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"
)

// Runner runs a test binary's tests: a *testing.M, or another helper's
// Main wrapped, so that one TestMain stops several shared servers.
type Runner interface{ Run() int }

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

// Main runs the tests and then stops the shared server, if one started.
func (k *Kind[T]) Main(m Runner) int {
	code := m.Run()
	if k.ok {
		k.shared.Close()
	}
	return code
}
