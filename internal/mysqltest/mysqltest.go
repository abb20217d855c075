// Package mysqltest starts a real MariaDB server (Debian's mariadbd) for
// tests, on a free loopback port with a data directory of its own, and
// stops it when the test binary ends. Start-up takes seconds, so a test
// binary shares one server: the first test that calls Start starts it,
// and TestMain stops it through Main. Without the binaries tests skip,
// unless LOCKBENCH_REQUIRE_MYSQL=1 makes their absence a failure (CI sets
// it after installing Debian's mariadb-server).
package mysqltest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/go-sql-driver/mysql"
	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/serverproc"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// mariadbd into a test failure instead of a skip.
const RequireEnv = "LOCKBENCH_REQUIRE_MYSQL"

// startTimeout bounds how long a start waits for the server to answer.
const startTimeout = 60 * time.Second

// Server is a running mariadbd.
type Server struct {
	// Addr is the server's 127.0.0.1:port.
	Addr string
	// DSN reaches the server as root, without a password, with no
	// database named (lockbench then uses its own).
	DSN string

	dir  string
	proc *serverproc.Proc
	mu   sync.Mutex // serializes pauses
}

var (
	shared    *Server
	sharedErr error
	once      sync.Once
)

// binaries finds mariadbd and mariadb-install-db, which Debian puts in
// /usr/sbin and /usr/bin.
func binaries() (server, install string, err error) {
	look := func(name string) (string, error) {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s not found", name)
	}
	if server, err = look("mariadbd"); err != nil {
		return "", "", err
	}
	install, err = look("mariadb-install-db")
	return server, install, err
}

// Available reports whether the MariaDB binaries are installed.
func Available() bool {
	_, _, err := binaries()
	return err == nil
}

// Start returns the test binary's shared server, starting it on first
// use. Without the binaries the test is skipped, or fails when
// LOCKBENCH_REQUIRE_MYSQL=1.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, _, err := binaries(); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("MariaDB is not installed (%v) and %s=1: apt-get install mariadb-server", err, RequireEnv)
		}
		t.Skipf("MariaDB is not installed (%v; apt-get install mariadb-server); skipping real-MySQL test (set %s=1 to fail instead)", err, RequireEnv)
	}
	once.Do(func() { shared, sharedErr = Launch() })
	if sharedErr != nil {
		t.Fatalf("starting mariadbd: %v", sharedErr)
	}
	return shared
}

// Main runs the tests and then stops the shared server, if one started;
// call it from TestMain: os.Exit(mysqltest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}

// Launch initializes a data directory in a new temporary directory and
// starts mariadbd on it, on a free 127.0.0.1 port, without binary log and
// with small buffers. The caller stops it with Stop.
func Launch() (*Server, error) {
	server, install, err := binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lockbench-mysqltest-")
	if err != nil {
		return nil, err
	}
	u := "mysql"
	if cur, err := user.Current(); err == nil {
		u = cur.Username // root must say so, or mariadbd refuses to run
	}
	data := filepath.Join(dir, "data")
	out, err := exec.Command(install, "--no-defaults", "--datadir="+data, "--user="+u,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mariadb-install-db: %v: %s", err, out)
	}
	// A free port is only free when we look: a server that exits before
	// it answers is retried on a new one.
	s, err := loopback.Retry(context.Background(), serverproc.ErrExited, func(port int, addr string) (*Server, error) {
		return launch(server, dir, data, u, port, addr)
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// launch starts one server on the data directory and port and waits for
// it; on an error the process is gone.
func launch(bin, dir, data, u string, port int, addr string) (*Server, error) {
	s := &Server{Addr: addr, dir: dir}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", s.Addr
	cfg.Timeout = 2 * time.Second
	s.DSN = cfg.FormatDSN()
	var err error
	s.proc, err = serverproc.Start(exec.Command(bin, "--no-defaults", "--datadir="+data, "--user="+u,
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-networking=0",
		"--socket="+filepath.Join(dir, "mysqld.sock"), "--pid-file="+filepath.Join(dir, "mysqld.pid"),
		"--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=32M",
		"--innodb-log-file-size=16M", "--innodb-flush-log-at-trx-commit=2", "--max-connections=1000"))
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", s.DSN)
	if err != nil {
		s.proc.Kill()
		return nil, err
	}
	defer db.Close()
	err = s.proc.Wait("mariadbd", s.Addr, startTimeout, 100*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return db.PingContext(ctx)
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Where implements servers.Host: the server is the test's own process,
// its address already in the server's name.
func (s *Server) Where() string { return "" }

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	s.proc.Kill()
	os.RemoveAll(s.dir)
}

// Pause stops the server's process (SIGSTOP) and resumes it after d in
// the background: it answers nothing meanwhile, and what was sent waits.
func (s *Server) Pause(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	if err := s.proc.Signal(syscall.SIGSTOP); err != nil {
		s.mu.Unlock()
		return err
	}
	go func() {
		defer s.mu.Unlock()
		time.Sleep(d)
		s.proc.Signal(syscall.SIGCONT)
	}()
	return nil
}

// DatabaseDSN is s's DSN with database db named: lockbench's tables go
// there, and the database, when a dial creates it, is dropped on Close.
func (s *Server) DatabaseDSN(t testing.TB, db string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = db
	return cfg.FormatDSN()
}

// Dial reaches s as lockbench does, its tables in database db (created
// now, dropped when the test ends).
func (s *Server) Dial(t testing.TB, db string) *servers.MySQL {
	t.Helper()
	m, err := servers.DialMySQL(t.Context(), s.DatabaseDSN(t, db))
	if err != nil {
		t.Fatalf("DialMySQL: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
