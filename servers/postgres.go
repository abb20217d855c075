package servers

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/serverproc"
)

// KindPostgres is a PostgreSQL, where the pg sales keep their inventory
// and take their locks.
const KindPostgres Kind = "postgres"

// postgresEnv is the environment variable --pg-dsn defaults to.
const postgresEnv = "LOCKBENCH_PG_DSN"

func init() {
	Register(KindInfo{
		Kind:   KindPostgres,
		Title:  "PostgreSQL",
		Flag:   "pg-dsn",
		Env:    postgresEnv,
		Usage:  "PostgreSQL of the pg implementations, as postgres://user:password@host:port/database (default $" + postgresEnv + "; without it lockbench starts Debian's PostgreSQL on loopback); lockbench creates its tables there and drops them after",
		Secret: true,
		Hint:   "keeps its inventory in PostgreSQL: give --pg-dsn=postgres://user:password@127.0.0.1:5432/db or $" + postgresEnv + ", or install Debian's postgresql and lockbench starts one on loopback",
		Check: func(dsn string) error {
			_, err := ParsePostgresDSN(dsn)
			return err
		},
		Redact: RedactPostgresDSN,
		Dial:   func(ctx context.Context, dsn string) (Server, error) { return DialPostgres(ctx, dsn) },
		Start:  func(ctx context.Context) (Server, error) { return StartPostgres(ctx) },
		Node:   func(spec string) (Server, error) { return postgresAt(spec) },
	})
}

// postgresAt rebuilds a server on a node from what the coordinator sent:
// the server's whole DSN, user, password, database and options, with
// the node's fault proxy's address in it (SpecAt); a bare host:port is
// reached as the user postgres, database postgres, as on a server
// lockbench started.
func postgresAt(spec string) (*Postgres, error) {
	if CheckHostPort(spec) == nil {
		return &Postgres{addr: spec, dsn: "postgres://postgres@" + spec + "/postgres?sslmode=disable"}, nil
	}
	addr, err := ParsePostgresDSN(spec)
	if err != nil {
		return nil, err
	}
	return &Postgres{addr: addr, dsn: spec}, nil
}

// RedactPostgresDSN returns dsn with its password replaced by PASSWORD.
func RedactPostgresDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "PASSWORD")
			return u.String()
		}
		return dsn
	}
	return pgPassword.ReplaceAllString(dsn, "${1}PASSWORD")
}

// pgPassword finds the password of a key=value DSN.
var pgPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// PostgresBinDir is where Debian's postgresql-15 package puts initdb and
// postgres.
const PostgresBinDir = "/usr/lib/postgresql/15/bin"

// pgStartTimeout bounds how long a start waits for the server to answer.
const pgStartTimeout = 60 * time.Second

// pgMaxConnections is the started server's max_connections: every node's
// pool, the run's own connection and the fault levers fit.
const pgMaxConnections = 400

// maxPostgresDSN bounds the length of a user's --pg-dsn.
const maxPostgresDSN = 4096

// Sentinel errors of the PostgreSQL servers, matched with errors.Is;
// each wraps the servers' own of its kind.
var (
	// ErrPostgresNotInstalled: initdb or postgres is missing
	// (ErrNotInstalled).
	ErrPostgresNotInstalled = fmt.Errorf("%w: PostgreSQL (apt-get install postgresql)", ErrNotInstalled)
	// ErrPostgresDSN: a DSN does not parse (ErrBadAddress).
	ErrPostgresDSN = fmt.Errorf("%w: PostgreSQL DSN", ErrBadAddress)
	// ErrPostgresUnreachable: the server did not answer (ErrUnreachable).
	ErrPostgresUnreachable = fmt.Errorf("%w: PostgreSQL does not answer", ErrUnreachable)
	// ErrPostgresNotStarted: a lever on a server lockbench did not start
	// (ErrNotStarted).
	ErrPostgresNotStarted = fmt.Errorf("%w: PostgreSQL", ErrNotStarted)
)

// Postgres is a PostgreSQL server: a user's, reached by its DSN
// (DialPostgres), or one lockbench started on loopback (StartPostgres),
// whose processes it can pause and restart.
type Postgres struct {
	dsn     string
	addr    string // host:port of the DSN
	version string

	// What lockbench started; proc is nil for a user's server.
	proc *serverproc.Proc
	bin  string
	dir  string
	data string
	port int
	cred *syscall.Credential // nil when lockbench does not run as root
	host PostgresHost        // runs the server when not a process of lockbench's (PostgresIn)
	mu   sync.Mutex          // serializes the levers
}

// PostgresAvailable reports whether Debian's PostgreSQL binaries are
// installed.
func PostgresAvailable() bool {
	_, err := postgresBinDir()
	return err == nil
}

func postgresBinDir() (string, error) {
	for _, name := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(PostgresBinDir, name)); err != nil {
			return "", ErrPostgresNotInstalled
		}
	}
	return PostgresBinDir, nil
}

// ParsePostgresDSN checks a user's DSN (a postgres:// URL or key=value
// pairs, as pgx reads them) and returns the host:port it reaches.
func ParsePostgresDSN(dsn string) (addr string, err error) {
	if len(dsn) > maxPostgresDSN {
		return "", fmt.Errorf("%w: %d bytes, at most %d", ErrPostgresDSN, len(dsn), maxPostgresDSN)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrPostgresDSN, err)
	}
	if cfg.Host == "" || filepath.IsAbs(cfg.Host) {
		return "", fmt.Errorf("%w: %q names no TCP host (a Unix socket cannot be routed through the fault proxy)", ErrPostgresDSN, cfg.Host)
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), nil
}

// DialPostgres reaches a user's PostgreSQL by its DSN and reads its
// version. lockbench leaves its processes alone: the levers fail with
// ErrPostgresNotStarted.
func DialPostgres(ctx context.Context, dsn string) (*Postgres, error) {
	addr, err := ParsePostgresDSN(dsn)
	if err != nil {
		return nil, err
	}
	p := &Postgres{dsn: dsn, addr: addr}
	if p.version, err = p.readVersion(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// StartPostgres initializes a data directory in a new temporary
// directory (initdb, trust authentication for the user postgres) and
// starts the server on it on a free 127.0.0.1 port, with no Unix socket,
// fsync off (a crash of the server loses nothing it committed; only
// the machine's would) and room for 400 connections. initdb and postgres refuse to
// run as root: as root, lockbench runs them as the user nobody, who is
// given the directory. Close stops the server and removes the directory.
func StartPostgres(ctx context.Context) (*Postgres, error) {
	bin, err := postgresBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lockbench-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{bin: bin, dir: dir, data: filepath.Join(dir, "data")}
	if os.Geteuid() == 0 {
		if p.cred, err = nobody(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", p.data, "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	// A free port is only free when asked: a server that exits before it
	// answers is started again on another.
	_, err = loopback.Retry(ctx, serverproc.ErrExited, func(port int, addr string) (struct{}, error) {
		p.port, p.addr = port, addr
		p.dsn = "postgres://postgres@" + addr + "/postgres?sslmode=disable"
		return struct{}{}, p.spawn(ctx)
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if p.version, err = p.readVersion(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// nobody is the credential of the user nobody.
func nobody() (*syscall.Credential, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("servers: PostgreSQL refuses to run as root, and there is no user nobody to run it as: %v", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("servers: user nobody has uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// spawn starts the server on its data directory and waits until it
// answers.
func (p *Postgres) spawn(ctx context.Context) error {
	args := append([]string{"-D", p.data}, PostgresArgs(p.port)...)
	args = append(args, "-c", "unix_socket_directories=", "-c", "log_min_messages=fatal", "-c", "logging_collector=off")
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	proc, err := serverproc.Launch(ctx, cmd, "postgres", p.addr, pgStartTimeout, func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, p.dsn)
		if err != nil {
			return err
		}
		return c.Close(ctx)
	})
	if err != nil {
		return err
	}
	p.proc = proc
	return nil
}

// readVersion asks the server for its version.
func (p *Postgres) readVersion(ctx context.Context) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(sctx, p.dsn)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrPostgresUnreachable, p.addr, err)
	}
	defer c.Close(context.Background())
	var v string
	if err := c.QueryRow(sctx, "SHOW server_version").Scan(&v); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrPostgresUnreachable, p.addr, err)
	}
	return v, nil
}

// DSN reaches the server: the user's, or postgres@127.0.0.1:port/postgres
// of a server lockbench started.
func (p *Postgres) DSN() string { return p.dsn }

// Addr is the server's host:port.
func (p *Postgres) Addr() string { return p.addr }

// Addrs implements Addressed: the server's address, which the engine
// puts behind a node's fault proxy.
func (p *Postgres) Addrs() []string { return []string{p.addr} }

// ConfigAt is the server's connection config with addr (a fault proxy's)
// in place of the server's host and port.
func (p *Postgres) ConfigAt(addr string) (*pgx.ConnConfig, error) {
	dsn, err := p.SpecAt([]string{addr})
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPostgresDSN, err)
	}
	return cfg, nil
}

// SpecAt implements Routable: the server's DSN, user, password, database
// and options and all, with addrs[0] (a fault proxy's host:port) in
// place of its host and port, and no fallback host. A node rebuilds the
// server from it; it carries the password, so it goes over the node
// protocol only, never on a command line or into output (Redact).
func (p *Postgres) SpecAt(addrs []string) (string, error) {
	if len(addrs) != 1 {
		return "", fmt.Errorf("%w: PostgreSQL at %d addresses, want one", ErrBadAddress, len(addrs))
	}
	host, port, err := net.SplitHostPort(addrs[0])
	if err != nil || host == "" {
		return "", fmt.Errorf("%w: %q: want host:port", ErrBadAddress, addrs[0])
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%w: %q: port out of range", ErrBadAddress, addrs[0])
	}
	if strings.HasPrefix(p.dsn, "postgres://") || strings.HasPrefix(p.dsn, "postgresql://") {
		u, err := url.Parse(p.dsn)
		if err != nil {
			// Its error would quote the DSN, password and all.
			return "", fmt.Errorf("%w: not a URL", ErrPostgresDSN)
		}
		u.Host = addrs[0]
		q := u.Query()
		q.Del("host")
		q.Del("port")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// key=value pairs: a key given twice takes its last value.
	return p.dsn + " host='" + host + "' port=" + port, nil
}

var _ Routable = (*Postgres)(nil)

// Name says what the server is and where.
func (p *Postgres) Name() string {
	name := "PostgreSQL " + p.version + " at " + p.addr
	if p.version == "" {
		name = "PostgreSQL at " + p.addr
	}
	if p.host != nil && p.host.Where() != "" {
		name += " " + p.host.Where()
	}
	return name
}

// Version is the server's version, as SHOW server_version says it.
func (p *Postgres) Version() string { return p.version }

// Close stops a server lockbench started (a fast shutdown: its sessions
// end, their transactions roll back) and removes its directory; a user's
// server is left as it was.
func (p *Postgres) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.host != nil {
		return p.host.Close()
	}
	if p.proc != nil {
		p.kill(syscall.SIGINT)
		p.proc = nil
	}
	if p.dir != "" {
		return os.RemoveAll(p.dir)
	}
	return nil
}

// kill stops the server: with SIGINT, a fast shutdown, given ten
// seconds; with SIGKILL, a crash of the postmaster and every backend.
func (p *Postgres) kill(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		for _, kid := range children(p.proc.Pid()) {
			syscall.Kill(kid, syscall.SIGKILL)
		}
	}
	p.proc.Stop(sig, 10*time.Second)
}

// Pause stops the server's processes (SIGSTOP to the postmaster and every
// backend) and resumes them after d in the background: it answers
// nothing meanwhile, and what was sent waits. The levers are serialized.
func (p *Postgres) Pause(ctx context.Context, d time.Duration) error {
	if p.host != nil {
		return p.host.Pause(ctx, d)
	}
	return pauseFor(d, p.hold)
}

// hold stops the server's processes until resume is called: the
// postmaster first (it forks no backend while stopped), then its
// children, each backend being a process group of its own.
func (p *Postgres) hold() (resume func(), err error) {
	p.mu.Lock()
	if p.proc == nil {
		p.mu.Unlock()
		return nil, ErrPostgresNotStarted
	}
	pids := []int{p.proc.Pid()}
	resume = func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGCONT)
		}
		p.mu.Unlock()
	}
	if err := syscall.Kill(pids[0], syscall.SIGSTOP); err != nil {
		resume()
		return nil, err
	}
	for _, pid := range children(pids[0]) {
		if syscall.Kill(pid, syscall.SIGSTOP) == nil {
			pids = append(pids, pid)
		}
	}
	return resume, nil
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// Restart crashes the server (SIGKILL to every process of it) and starts
// it again on its data and port, waiting until it answers: every session
// ends, with its session-level advisory locks, and what was committed
// survives (crash recovery).
func (p *Postgres) Restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.host != nil {
		return p.host.Restart(ctx)
	}
	if p.proc == nil {
		return ErrPostgresNotStarted
	}
	p.kill(syscall.SIGKILL)
	p.proc = nil
	// Killed, it must come back whatever becomes of ctx (a fault's, which
	// ends with the sale): the start's own timeout bounds the wait.
	return p.spawn(context.WithoutCancel(ctx))
}
