package servers

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Backend is a Redis server: the inventory of the Redis sales and the
// locks that live in Redis.
type Backend interface {
	Server
	// Options returns client options that reach the server; the caller
	// sets pool sizes and hooks.
	Options() *redis.Options
}

// ClientOptions are the options every client of lockbench uses: no
// retries (a retried write would blur what is unknown), no handshake
// extras, RESP2 so that the embedded server and old servers behave alike.
func ClientOptions(addr, password string) *redis.Options {
	return &redis.Options{
		Addr:            addr,
		Password:        password,
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		// A client killed by a fault stops waiting at once, as a dead
		// process would; the command it sent may still be applied.
		ContextTimeoutEnabled: true,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           3 * time.Second,
		WriteTimeout:          3 * time.Second,
		PoolTimeout:           30 * time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
}

// Embedded is an in-process, Redis-compatible server (miniredis) whose
// clock is driven forward in real time, so that leases expire as they
// would on a real server, and runs out early by no more than the
// longest step of that clock (see SteppedClock).
type Embedded struct {
	m    *miniredis.Miniredis
	addr string // host:port, the same after a restart
	stop chan struct{}
	done sync.WaitGroup

	mu       sync.Mutex
	watchers map[*time.Duration]struct{} // each WatchClock's longest step so far

	started     time.Time    // the clock lastStep and pausedUntil count from
	lastStep    atomic.Int64 // when the step under way read the clock, in ns since started
	pausedUntil atomic.Int64 // when the last Pause ends, in ns since started
	clients     sync.Map     // *server.Peer of every client connection -> *clientState: what Pause holds
	scripts     *scripts     // runs the clients' scripts; nil: miniredis does

	life   sync.RWMutex                  // held by Restart and Close, and read by dial: no connection to a server going down
	down   bool                          // closed, or not restarted: dial refuses
	srv    atomic.Pointer[server.Server] // m's server, nil while it restarts or once closed (miniredis's m.Server() is read unlocked)
	closed atomic.Bool                   // Close was called: the clock stands still for good
}

// StartEmbedded starts an embedded server on a free loopback port.
func StartEmbedded() (*Embedded, error) { return startEmbedded(true) }

// startEmbedded starts an embedded server whose scripts run on a kept
// Lua state (keep) or, as miniredis runs them, each on a new one.
func startEmbedded(keep bool) (*Embedded, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("%w: embedded server: %v", ErrUnreachable, err)
	}
	e := &Embedded{m: m, addr: m.Addr(), stop: make(chan struct{}), watchers: map[*time.Duration]struct{}{}, started: time.Now()}
	e.srv.Store(m.Server())
	if keep {
		s, err := newScripts(m, e.srv.Load)
		if err != nil {
			m.Close()
			return nil, err
		}
		e.scripts = s
	}
	m.Server().SetPreHook(e.hook)
	if e.scripts != nil {
		if err := e.scripts.boot(m.Server()); err != nil {
			m.Close()
			return nil, err
		}
	}
	e.done.Add(1)
	go e.tick()
	return e, nil
}

// SteppedClock is a server whose clock moves in steps, each charging
// every key's time to live with the time since the step before: a key set
// between two steps is charged from the earlier one, so a lease on it may
// run out early by as much as a step lasts.
type SteppedClock interface {
	// WatchClock starts measuring the steps; the function it returns
	// stops and returns the longest step since. Watches may overlap.
	WatchClock() func() time.Duration
}

// tick moves the server's clock with the wall clock, about a millisecond
// at a time, so that keys expire in real time.
//
// Each step charges the time since the previous step read the clock,
// and is over when miniredis has charged it. A key set meanwhile runs
// out early by less than that span: a millisecond or so on an idle
// process; as long as this goroutine waited for a core, or for the
// server's lock, on a busy one (tens of milliseconds, which once made a
// correct lock's lease look broken while live). (miniredis's ClockTTL
// charges every command instead, exactly, but sorts every key to do so:
// a sale of 1,000 items ran 15 times slower.)
func (e *Embedded) tick() {
	defer e.done.Done()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		// The tick's own time is when it fired, stale by however long this
		// goroutine waited to run: the clock is read now.
		now := time.Now()
		e.lastStep.Store(int64(now.Sub(e.started)))
		e.m.SetTime(now)
		e.m.FastForward(now.Sub(last))
		e.stepped(time.Since(last))
		last = now
	}
}

// stepped records a step of length d for every watch.
func (e *Embedded) stepped(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for w := range e.watchers {
		*w = max(*w, d)
	}
}

// WatchClock implements SteppedClock.
func (e *Embedded) WatchClock() func() time.Duration {
	w := new(time.Duration)
	e.mu.Lock()
	e.watchers[w] = struct{}{}
	e.mu.Unlock()
	return func() time.Duration {
		// The step under way counts as far as it went (none after Close).
		var going time.Duration
		if !e.closed.Load() {
			going = time.Since(e.started) - time.Duration(e.lastStep.Load())
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.watchers, w)
		return max(*w, going)
	}
}

// Name implements Backend.
func (e *Embedded) Name() string { return "embedded (miniredis)" }

// InProcess marks the embedded server as running inside this process:
// never lost, its slowness the process's own.
func (e *Embedded) InProcess() {}

// Version implements Server: the embedded server is miniredis.
func (e *Embedded) Version() string { return "miniredis" }

// Options implements Backend.
func (e *Embedded) Options() *redis.Options {
	o := ClientOptions(e.addr, "")
	o.Dialer = e.dial
	return o
}

// dial connects a client of this process to the embedded server over a
// Unix socket pair, which costs the process about half the system time
// of a loopback TCP connection per command (no TCP stack); the server serves it
// as a client that came through its port. Another address (a fault's
// proxy in front of the server) is dialled over TCP. The connection is a
// socket, so go-redis's check of an idle connection works as on TCP, and
// a restart closes it as it closes a TCP client's.
func (e *Embedded) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr != e.addr {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("embedded server: socket pair: %w", err)
	}
	var ends [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "embedded server")
		c, err := net.FileConn(f) // a copy of the descriptor
		f.Close()
		if err != nil {
			if i == 0 {
				syscall.Close(fds[1])
			} else {
				ends[0].Close()
			}
			return nil, fmt.Errorf("embedded server: socket pair: %w", err)
		}
		ends[i] = c
	}
	// A server that is down (Close, or Restart under way) refuses, as its
	// port would; Restart waits for a dial under way.
	e.life.RLock()
	defer e.life.RUnlock()
	srv := e.srv.Load()
	if e.down || srv == nil {
		ends[0].Close()
		ends[1].Close()
		return nil, fmt.Errorf("embedded server at %s: %w", addr, syscall.ECONNREFUSED)
	}
	srv.ServeConn(ends[1])
	return ends[0], nil
}

// Addr is the embedded server's address.
func (e *Embedded) Addr() string { return e.addr }

// Pause implements Pauser: the embedded server stops answering for d,
// as a real server under CLIENT PAUSE ALL: every command waits, one
// already running ends first, and keys go on running out in real time
// (the clock keeps its steps short, see tick).
func (e *Embedded) Pause(_ context.Context, d time.Duration) error {
	until := int64(time.Since(e.started) + d)
	for {
		cur := e.pausedUntil.Load()
		if cur >= until || e.pausedUntil.CompareAndSwap(cur, until) {
			return nil
		}
	}
}

// hook is the server's hook before every command: it holds a client's
// command until the server's pause is over, then lets it run or runs it
// (a script, see scripts).
//
// A script's own calls pass the hook too, under the server's lock: they
// are never held (the script holding the lock through the pause would
// stop the clock with it). A client's connection is told from a script's
// call by its first command, which comes before miniredis gives the
// connection a context (a script's calls carry their caller's).
func (e *Embedded) hook(p *server.Peer, cmd string, args ...string) bool {
	st, ok := e.clients.Load(p)
	if !ok {
		if p.Ctx != nil {
			if e.scripts != nil {
				e.scripts.seeCall(p)
			}
			return false // a script's call
		}
		if e.scripts != nil && e.scripts.isOwn(p) {
			return false
		}
		st = &clientState{}
		e.clients.Store(p, st)
		p.OnDisconnect(func() { e.clients.Delete(p) })
	}
	e.waitPause()
	if e.scripts == nil {
		return false
	}
	return e.scripts.hook(p, st.(*clientState), cmd, args)
}

// waitPause returns when the server's pause is over.
func (e *Embedded) waitPause() {
	for {
		left := time.Duration(e.pausedUntil.Load()) - time.Since(e.started)
		if left <= 0 {
			return
		}
		time.Sleep(left)
	}
}

// Restart implements Restarter: the server drops every connection and
// comes back on the same address with no data, as a Redis without
// persistence does after a restart.
func (e *Embedded) Restart(context.Context) error {
	// A restarted server listens before its hook is set again: the pause
	// is waited out first, so that no command slips through it.
	time.Sleep(time.Duration(e.pausedUntil.Load()) - time.Since(e.started))
	e.life.Lock()
	defer e.life.Unlock()
	e.srv.Store(nil)
	e.m.Close()
	e.m.FlushAll()
	// Until the hook is set again, the restarted server answers every
	// command with an error, as a Redis loading its data does: a client
	// served before the hook would otherwise pass it for good.
	e.m.SetError("LOADING the embedded server is restarting")
	if err := e.m.Restart(); err != nil {
		e.down = true
		return fmt.Errorf("%w: embedded server restart: %v", ErrUnreachable, err)
	}
	e.m.Server().SetPreHook(e.hook) // a restarted server's hook is miniredis's own again
	e.srv.Store(e.m.Server())
	return nil
}

// Close implements Backend.
func (e *Embedded) Close() error {
	if e.closed.Swap(true) {
		return nil // closed already
	}
	close(e.stop)
	e.done.Wait()
	e.life.Lock()
	defer e.life.Unlock()
	e.down = true
	e.srv.Store(nil)
	e.m.Close()
	return nil
}

// External is a Redis server lockbench did not start, reached by address.
type External struct {
	addr, password string
	version        string
}

// DialRedis checks that a Redis server answers at addr and returns it as
// a backend. It fails with ErrUnreachable within a few seconds when it
// does not.
func DialRedis(ctx context.Context, addr, password string) (*External, error) {
	c := redis.NewClient(ClientOptions(addr, password))
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return nil, fmt.Errorf("%w: redis at %s: %v", ErrUnreachable, addr, err)
	}
	x := &External{addr: addr, password: password, version: "?"}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			x.version = v
		}
	}
	return x, nil
}

// Name implements Backend.
func (x *External) Name() string { return fmt.Sprintf("redis %s at %s", x.version, x.addr) }

// Version is the server's redis_version, "?" when it did not say.
func (x *External) Version() string { return x.version }

// Options implements Backend.
func (x *External) Options() *redis.Options { return ClientOptions(x.addr, x.password) }

// Pause implements Pauser with CLIENT PAUSE ALL: the server answers no
// client for d and expires no key meanwhile.
func (x *External) Pause(ctx context.Context, d time.Duration) error {
	c := redis.NewClient(ClientOptions(x.addr, x.password))
	defer c.Close()
	ms := max(1, d.Milliseconds())
	if err := c.Do(ctx, "CLIENT", "PAUSE", ms, "ALL").Err(); err != nil {
		return fmt.Errorf("%w: CLIENT PAUSE: %v", ErrUnreachable, err)
	}
	return nil
}

// Close implements Backend; the server is not lockbench's to stop.
func (x *External) Close() error { return nil }
