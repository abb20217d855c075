// Package zktest starts Debian's ZooKeeper server for tests, on a free
// loopback port with a temporary data directory, and stops it when the
// test ends. Without java or the ZooKeeper jars tests skip, unless
// LOCKBENCH_REQUIRE_ZK=1 makes their absence a failure (CI sets it after
// installing zookeeperd), so that a missing server can never turn a
// required run green.
package zktest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/locks"
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
	var errs []error
	for range 3 {
		addr, err := start(t)
		if err == nil {
			return addr
		}
		errs = append(errs, err)
		if !errors.Is(err, errExited) {
			break
		}
	}
	t.Fatalf("starting zookeeper: %v", errors.Join(errs...))
	return ""
}

// errExited means the server process ended before it answered.
var errExited = errors.New("zookeeper exited")

func start(t testing.TB) (string, error) {
	t.Helper()
	dir := t.TempDir()
	port, err := loopback.FreePort()
	if err != nil {
		return "", err
	}
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
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	out := new(syncBuffer)
	cmd := exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", Jar+":"+logJar, "org.apache.zookeeper.server.ZooKeeperServerMain", conf)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(startTimeout)
	for {
		// srvr, not ruok: ruok says imok before the server accepts
		// sessions (seen with the container image).
		if locks.ZooKeeperVersion(addr, time.Second) != "" {
			t.Cleanup(stop)
			return addr, nil
		}
		select {
		case <-exited:
			return "", fmt.Errorf("%w on %s: %s", errExited, addr, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("zookeeper on %s did not answer within %v; output: %s", addr, startTimeout, out.String())
		}
	}
}

// syncBuffer collects the server's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
