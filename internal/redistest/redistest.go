// Package redistest starts real redis-server processes for tests, each on
// a free loopback port, and stops them when the test ends. Without the
// binary on PATH tests skip, unless LOCKBENCH_REQUIRE_REDIS=1 makes its
// absence a failure (CI sets it after installing Debian's redis-server), so
// that a missing server can never turn a required run green.
package redistest

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/serverproc"
	"github.com/lockbench/lockbench/sentinels"
	"github.com/lockbench/lockbench/servers"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// redis-server into a test failure instead of a skip.
const RequireEnv = "LOCKBENCH_REQUIRE_REDIS"

// startTimeout bounds how long Start waits for the server to answer PING.
const startTimeout = 5 * time.Second

// Available reports whether redis-server is on PATH.
func Available() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil
}

// Start runs a redis-server on a free 127.0.0.1 port, without persistence,
// waits until it answers PING, and returns its address. The server is
// killed when the test ends. Without redis-server on PATH the test is
// skipped, or fails when LOCKBENCH_REQUIRE_REDIS=1.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redis-server is not on PATH and %s=1: install it (apt-get install redis-server)", RequireEnv)
		}
		t.Skipf("redis-server is not on PATH (apt-get install redis-server); skipping real-Redis test (set %s=1 to fail instead)", RequireEnv)
	}
	// The free port is only free when we look: another process may take
	// it before the server binds, so a server that exits early is retried
	// on a new port.
	addr, err := loopback.Retry(context.Background(), serverproc.ErrExited, func(port int, addr string) (string, error) {
		return start(t, bin, port, addr)
	})
	if err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	return addr
}

// start runs one server on port and waits for it; on error the process
// is gone.
func start(t testing.TB, bin string, port int, addr string) (string, error) {
	t.Helper()
	p, err := serverproc.Start(exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no"))
	if err != nil {
		return "", err
	}
	err = p.Wait("redis-server", addr, startTimeout, 20*time.Millisecond, func() error {
		return sentinels.PingProcess(context.Background(), addr, p.Pid())
	})
	if err != nil {
		return "", err
	}
	t.Cleanup(p.Kill)
	return addr, nil
}

// Client returns a client for addr with lockbench's options: RESP2, no
// retries (a retried write would blur what is unknown), no handshake
// extras. It is closed when the test ends.
func Client(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(options(addr))
	t.Cleanup(func() { c.Close() })
	return c
}

// options mirror the client options of workload/backend.go.
func options(addr string) *redis.Options {
	return &redis.Options{
		Addr:            addr,
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

// Embedded starts lockbench's embedded Redis for the test, closed when it
// ends.
func Embedded(t testing.TB) *servers.Embedded {
	t.Helper()
	b, err := servers.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
