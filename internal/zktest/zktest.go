// Package zktest starts Debian's ZooKeeper server for tests, on a free
// loopback port with a temporary data directory, and stops it when the
// test ends. Without java or the ZooKeeper jars tests skip, unless
// LOCKBENCH_REQUIRE_ZK=1 makes their absence a failure (CI sets it after
// installing zookeeperd), so that a missing server can never turn a
// required run green.
package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/serverproc"
	"github.com/lockbench/lockbench/internal/zkver"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// ZooKeeper into a test failure instead of a skip.
const RequireEnv = "LOCKBENCH_REQUIRE_ZK"

// Jar is Debian's ZooKeeper server jar; its manifest's Class-Path names
// the jars it depends on.
const Jar = "/usr/share/java/zookeeper.jar"

// logJar is an SLF4J binding that discards the server's log.
const logJar = "/usr/share/java/slf4j-nop.jar"

// MinSession is the shortest session timeout the test servers grant.
const MinSession = 200 * time.Millisecond

// startTimeout bounds how long Start waits for the server to answer.
const startTimeout = 30 * time.Second

// Available reports whether java and the ZooKeeper jar are installed.
func Available() bool {
	_, err := exec.LookPath("java")
	_, jerr := os.Stat(Jar)
	return err == nil && jerr == nil
}

// Start runs a standalone ZooKeeper on a free 127.0.0.1 port (tickTime
// 100 ms, so that sessions as short as 200 ms are granted; the srvr
// four-letter word allowed; no admin server), waits until it answers,
// and returns its address. The server is killed when the test ends.
func Start(t testing.TB) string {
	t.Helper()
	if !Available() {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("java or %s is missing and %s=1: install zookeeperd (apt-get install zookeeperd)", Jar, RequireEnv)
		}
		t.Skipf("java or %s is missing (apt-get install zookeeperd); skipping real-ZooKeeper test (set %s=1 to fail instead)", Jar, RequireEnv)
	}
	// A free port is only free when we look: a server that exits before
	// it serves is retried on a new one.
	addr, err := loopback.Retry(context.Background(), serverproc.ErrExited, func(port int, addr string) (string, error) {
		return start(t, port, addr)
	})
	if err != nil {
		t.Fatalf("starting zookeeper: %v", err)
	}
	return addr
}

// start runs one server on port and waits for it; on error the process
// is gone.
func start(t testing.TB, port int, addr string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	// forceSync=no: every lock and unlock is a write, and a throwaway
	// server need not wait for the disk (a quarter of a sale's time).
	cfg := fmt.Sprintf(`tickTime=100
minSessionTimeout=%d
maxSessionTimeout=120000
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
admin.enableServer=false
forceSync=no
4lw.commands.whitelist=srvr,ruok
`, MinSession.Milliseconds(), filepath.Join(dir, "data"), port)
	conf := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		return "", err
	}
	p, err := serverproc.Start(exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", Jar+":"+logJar, "org.apache.zookeeper.server.ZooKeeperServerMain", conf))
	if err != nil {
		return "", err
	}
	err = p.Wait("zookeeper", addr, startTimeout, 50*time.Millisecond, func() error {
		// srvr, not ruok: ruok says imok before the server accepts
		// sessions (seen with the container image).
		if zkver.Get(addr, time.Second) == "" {
			return errors.New("no answer to srvr")
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	t.Cleanup(p.Kill)
	return addr, nil
}
