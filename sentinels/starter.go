package sentinels

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/internal/serverproc"
	"github.com/redis/go-redis/v9"
)

// Starter starts the topology's redis-servers and Sentinels: as processes
// of this machine (Local, what Start uses), or in Docker containers
// (containers.SentinelStarter, which this package does not import, so
// that it stays free of the Docker client's dependencies). Whatever
// starts them, each server listens on 127.0.0.1 of this machine, and the
// relays, the holds and the failover stay in lockbench's process.
type Starter interface {
	// Server starts a redis-server with args (its port, its replication
	// settings: everything but where it keeps its files) listening on
	// 127.0.0.1:port, and returns once it answers PING there.
	Server(ctx context.Context, port int, args []string) (Process, error)
	// Sentinel starts a Sentinel on 127.0.0.1:port whose configuration
	// file holds conf (a file of its own, which Sentinel rewrites), and
	// returns once it answers PING.
	Sentinel(ctx context.Context, port int, conf string) (Process, error)
	// Where says where the processes run, for the backend's name: "" for
	// this machine's processes, "in docker (IMAGE)" for containers.
	Where() string
	// Close removes what the starter made besides its processes (their
	// files); the topology stops every process first.
	Close() error
}

// Process is a redis-server or Sentinel a Starter started.
type Process interface {
	// Pause freezes the process (SIGSTOP, docker pause): it answers
	// nobody and expires nothing until Resume.
	Pause(ctx context.Context) error
	// Resume lets a paused process run again; on a running one it does
	// nothing.
	Resume(ctx context.Context) error
	// Stop ends the process, resuming it first if it is paused, and
	// removes it (a container); it waits until it has.
	Stop() error
}

// ErrExited means a process ended before it served: its port taken
// meanwhile, most likely. A Starter's error wraps it when a start on
// another port is worth a try.
var ErrExited = serverproc.ErrExited

// Ping reports whether a redis-server or Sentinel answers PING at addr:
// the readiness probe of a Starter and of the test helpers' servers. It
// dials first: go-redis logs every refused dial, and a server that is
// starting refuses a few.
func Ping(ctx context.Context, addr string) error {
	return ask(ctx, addr, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
}

// ask dials addr, then, when it accepts, asks the server there through a
// client of its own, within half a second.
func ask(ctx context.Context, addr string, f func(context.Context, *redis.Client) error) error {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return err
	}
	conn.Close()
	c := redis.NewClient(options(addr))
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	return f(ctx, c)
}

// PingProcess is Ping that also makes sure the server answering is
// process pid (INFO's process_id). Two starts may be given the same free
// port: the second's process fails to bind and exits, but the first's
// server answers its PING meanwhile, and would be taken for its own.
// Then the error wraps ErrExited, and the start is tried on another port
// once its process is gone.
func PingProcess(ctx context.Context, addr string, pid int) error {
	// INFO answers as PING does, and names the process.
	return ask(ctx, addr, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		if got := field(info, "process_id"); got != strconv.Itoa(pid) {
			return fmt.Errorf("%w: %s answers as process %s, not %d: another server has its port", ErrExited, addr, got, pid)
		}
		return nil
	})
}

// local starts redis-server and redis-sentinel as child processes, their
// files in a directory of their own.
type local struct {
	bin      string // redis-server
	sentinel string // redis-sentinel, "" when only redis-server --sentinel
	dir      string
}

// Local is the Starter of processes on this machine, from Debian's
// redis-server (and redis-sentinel when installed); it fails with
// ErrUnavailable without redis-server.
func Local() (Starter, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrUnavailable
	}
	s := &local{bin: bin}
	if p, err := exec.LookPath("redis-sentinel"); err == nil {
		s.sentinel = p
	}
	if s.dir, err = os.MkdirTemp("", "lockbench-sentinel-"); err != nil {
		return nil, err
	}
	return s, nil
}

// Server implements Starter.
func (s *local) Server(ctx context.Context, port int, args []string) (Process, error) {
	args = append(args, "--dir", s.dir, "--dbfilename", fmt.Sprintf("dump-%d.rdb", port))
	return s.start(ctx, "redis-server", port, exec.Command(s.bin, args...))
}

// Sentinel implements Starter.
func (s *local) Sentinel(ctx context.Context, port int, conf string) (Process, error) {
	file := filepath.Join(s.dir, fmt.Sprintf("sentinel-%d.conf", port))
	if err := os.WriteFile(file, []byte(conf+fmt.Sprintf("dir %s\n", s.dir)), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(s.bin, file, "--sentinel")
	if s.sentinel != "" {
		cmd = exec.Command(s.sentinel, file)
	}
	return s.start(ctx, "redis-sentinel", port, cmd)
}

// start runs cmd and waits until it answers PING on port.
func (s *local) start(ctx context.Context, name string, port int, cmd *exec.Cmd) (Process, error) {
	p, err := serverproc.Start(cmd)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := p.Wait(name, addr, startTimeout, 20*time.Millisecond, func() error { return PingProcess(ctx, addr, p.Pid()) }); err != nil {
		p.Kill()
		return nil, err
	}
	return proc{p}, nil
}

// Where implements Starter.
func (s *local) Where() string { return "" }

// Close implements Starter: the processes' files go.
func (s *local) Close() error { return os.RemoveAll(s.dir) }

// proc is a local process: SIGSTOP and SIGCONT pause and resume it.
type proc struct{ p *serverproc.Proc }

func (p proc) Pause(context.Context) error  { return p.p.Signal(syscall.SIGSTOP) }
func (p proc) Resume(context.Context) error { return p.p.Signal(syscall.SIGCONT) }
func (p proc) Stop() error                  { p.p.Kill(); return nil }

// errStarter is a Starter's error as the topology reports it.
func errStarter(what string, err error) error {
	if errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("sentinels: starting %s: %w", what, err)
}
