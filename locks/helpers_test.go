package locks_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
)

// TestMain drops go-redis's own log lines (a pool's refused dials while a
// test's server is stopping), as the CLI does, so that a test's output is
// its own. Unless -parallel is given it runs four subtests at once: they
// mostly wait (spin sleeps, leases running out), and no deadline in them
// can be reached by a busy machine, so parallelism costs no correctness.
// It stops the shared etcd cluster, if one started.
func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{})
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "4"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(servertest.Main(m))
}

// quietRedis is a go-redis logger that logs nothing.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// Margins. The machine is shared and small: waits are generous, and no
// test asserts on speed. A bound that must not run out (patience, a test's
// deadline) is long enough that only a hang reaches it, never a busy
// machine.
const (
	// patience bounds an Acquire that must succeed.
	patience = 2 * time.Minute
	// refused is how long an Acquire that must fail is given.
	refused = 300 * time.Millisecond
	// shortTTL is a lease meant to run out during a test.
	shortTTL = 200 * time.Millisecond
)

// backend is a server the tests run against.
type backend struct {
	name  string
	start func(testing.TB) string // returns the server's address
}

// backends lists the servers every test runs against: the embedded server
// the CLI defaults to, and a real redis-server, since the locks claim Redis
// semantics.
var backends = []backend{
	{name: "embedded", start: startEmbedded},
	{name: "redis", start: redistest.Start},
}

// startEmbedded starts the embedded server the CLI defaults to, kept in
// embeddedClocks until the test ends, so that a stallWatch counts the
// steps of its clock (a lease on it may run out early by one).
func startEmbedded(t testing.TB) string {
	t.Helper()
	e, err := servers.StartEmbedded()
	if err != nil {
		t.Fatalf("starting the embedded server: %v", err)
	}
	embeddedClocks.Store(e, struct{}{})
	t.Cleanup(func() {
		embeddedClocks.Delete(e)
		e.Close()
	})
	return e.Addr()
}

// embeddedClocks holds every embedded server the tests run now.
var embeddedClocks sync.Map

// watchEmbeddedClocks starts watching the clocks of every embedded server
// the tests run now (those of other tests too: it only ever widens); the
// function it returns stops and returns the longest step.
func watchEmbeddedClocks() func() time.Duration {
	var clocks []servers.SteppedClock
	embeddedClocks.Range(func(k, _ any) bool {
		clocks = append(clocks, k.(*servers.Embedded))
		return true
	})
	return servers.WatchClocks(clocks...)
}

// server is one running backend and an administrative client to look at
// the keys the locks leave behind.
type server struct {
	addr  string
	admin *redis.Client
}

// forEachBackend runs f as a parallel subtest per backend, each with a
// server of its own that lives until f's subtests are done.
func forEachBackend(t *testing.T, f func(t *testing.T, s *server)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			addr := b.start(t)
			f(t, &server{addr: addr, admin: redistest.Client(t, addr)})
		})
	}
}

// lockImpls returns the implementations that guard the sale with a Locker
// held in one Redis (the ZooKeeper and etcd ones, and lua-wait, which needs a
// replica, have tests of their own).
func lockImpls() []locks.Impl {
	var out []locks.Impl
	for _, im := range locks.All() {
		if im.Uses != locks.UsesZooKeeper && im.Uses != locks.UsesReplica && im.Uses != locks.UsesEtcd {
			out = append(out, im)
		}
	}
	return out
}

// impl returns the implementation called name, or fails the test.
func impl(t *testing.T, name string) locks.Impl {
	t.Helper()
	im, ok := locks.Lookup(name)
	if !ok {
		t.Fatalf("no implementation %q", name)
	}
	return im
}

// lockKey is the key a test's lock lives under: each implementation and
// scenario gets its own prefix, so that parallel subtests sharing a server
// never meet.
func lockKey(t *testing.T) string {
	return "lockbench-test:" + t.Name() + ":lock"
}

// node makes the Locker of one simulated node on its own client, unless
// env.Redis is given, and closes it when the test ends. env.Node and
// env.Key are the caller's.
func (s *server) node(t *testing.T, im locks.Impl, env locks.Env) locks.Locker {
	t.Helper()
	if env.Redis == nil {
		env.Redis = redistest.Client(t, s.addr)
	}
	l, err := im.New(t.Context(), env)
	if err != nil {
		t.Fatalf("%s: New(node %d): %v", im.Name, env.Node, err)
	}
	if c, ok := l.(io.Closer); ok {
		// Registered after the client's cleanup, so it runs first.
		t.Cleanup(func() { c.Close() })
	}
	return l
}

// nodes makes n nodes of im on key with lease ttl.
func (s *server) nodes(t *testing.T, im locks.Impl, key string, ttl time.Duration, n int) []locks.Locker {
	t.Helper()
	out := make([]locks.Locker, n)
	for i := range out {
		out[i] = s.node(t, im, locks.Env{Node: i, Key: key, TTL: ttl})
	}
	return out
}

// holdCtx is a context for acquisitions whose lease should live on: the
// watchdog renews in the acquiring context, so it must outlast the call.
// It ends with the test, or after patience so that a hang fails.
func holdCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	t.Cleanup(cancel)
	return ctx
}

// acquire obtains l for owner within patience, or fails the test. The
// lease lives in ctx (see holdCtx).
func acquire(t *testing.T, ctx context.Context, l locks.Locker, owner string) locks.Lease {
	t.Helper()
	return acquireWatched(t, nil, ctx, l, owner)
}

// acquireWatched is acquire within a try of quietTry whose lease can lapse
// while it waits: a failure is judged only when w saw no stall (see
// stallWatch.judge; a nil w judges every failure).
func acquireWatched(t *testing.T, w *stallWatch, ctx context.Context, l locks.Locker, owner string) locks.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeoutCause(ctx, patience, errors.New("acquire: out of patience"))
	t.Cleanup(cancel) // not before: the watchdog renews in ctx
	lease, err := l.Acquire(ctx, owner)
	if err != nil {
		w.judge(t)
		t.Fatalf("Acquire(%q): %v", owner, err)
	}
	return lease
}

// release releases lease and checks the error against want (nil for
// success), with errors.Is.
func release(t *testing.T, lease locks.Lease, want error) {
	t.Helper()
	err := lease.Release(t.Context())
	// A release whose server calls ran past the lock's own bound for
	// them (redlock's share of a try, a tenth of the lease) on a machine
	// standing still says nothing of who holds the lock: it is asked
	// again, a few times, as a client would.
	for try := 1; try < 5 && errors.Is(err, context.DeadlineExceeded) && t.Context().Err() == nil; try++ {
		t.Logf("Release() = %v: asked again", err)
		err = lease.Release(t.Context())
	}
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Errorf("Release() = %v, want %v", err, want)
	}
}

// mustNotAcquire checks that owner cannot obtain l within d: the lock is
// held by someone else. Giving up (ErrNotObtained) counts as not obtaining.
func mustNotAcquire(t *testing.T, l locks.Locker, owner string, d time.Duration) {
	t.Helper()
	checkRefused(t, owner, tryAcquire(t, l, owner, d))
}

// tryAcquire tries to obtain l for owner within d and releases what it
// obtained: nil means it got the lock.
func tryAcquire(t *testing.T, l locks.Locker, owner string, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	lease, err := l.Acquire(ctx, owner)
	if err == nil {
		lease.Release(t.Context())
	}
	return err
}

// checkRefused checks that err, tryAcquire's answer for owner, says the
// lock was held by someone else.
func checkRefused(t *testing.T, owner string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("Acquire(%q) obtained a lock that is held", owner)
	case !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, locks.ErrNotObtained):
		t.Errorf("Acquire(%q) = %v, want %v or %v", owner, err, context.DeadlineExceeded, locks.ErrNotObtained)
	}
}

// exists reports whether key is on the server.
func (s *server) exists(t *testing.T, key string) bool {
	t.Helper()
	n, err := s.admin.Exists(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

// pttl returns the key's PTTL reply in milliseconds: -1 for no expiry, -2
// for no key.
func (s *server) pttl(t *testing.T, key string) int64 {
	t.Helper()
	n, err := s.admin.Do(t.Context(), "PTTL", key).Int64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return n
}

// waitGone waits until key has left the server: its lease ran out.
func (s *server) waitGone(t *testing.T, key string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for s.exists(t, key) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists after %v (pttl %d)", key, patience, s.pttl(t, key))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitRenewals returns once key's lease has been renewed n times, seen
// as its PTTL rising between two readings; it fails the test if the key
// vanishes first (nobody renewed it in time) or after patience. It waits
// for events, not for a length of time, so it says the same on a busy
// machine as on a quiet one, as long as the lease outlasts the machine's
// stalls: within a try of quietTry, its failures are judged by w (see
// acquireWatched).
func (s *server) waitRenewals(t *testing.T, w *stallWatch, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(patience)
	last, seen := s.pttl(t, key), 0
	for seen < n {
		if time.Now().After(deadline) {
			w.judge(t)
			t.Fatalf("%s renewed %d times in %v, want %d", key, seen, patience, n)
		}
		time.Sleep(10 * time.Millisecond)
		got := s.pttl(t, key)
		switch {
		case got < 0:
			w.judge(t)
			t.Fatalf("%s gone (pttl %d) after %d renewals, want %d", key, got, seen, n)
		case got > last:
			seen++
		}
		last = got
	}
}

// hashOwners returns the owners recorded in a hash lock (reentrant,
// watchdog, renew-naive), with their counts.
func (s *server) hashOwners(t *testing.T, key string) map[string]string {
	t.Helper()
	m, err := s.admin.HGetAll(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}

// getInt returns the integer value of a string key.
func (s *server) getInt(t *testing.T, key string) int64 {
	t.Helper()
	v, err := s.admin.Get(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("GET %s = %q: %v", key, v, err)
	}
	return n
}

// pauseAt is a Probe that blocks at one point until resumed, as a paused
// process would, and counts how often that point was reached.
type pauseAt struct {
	point   locks.Point
	reached chan struct{} // closed the first time the point is reached
	resume  chan struct{} // closed to let the paused caller go on
	once    sync.Once
	mu      sync.Mutex
	hits    int
}

func newPauseAt(p locks.Point) *pauseAt {
	return &pauseAt{point: p, reached: make(chan struct{}), resume: make(chan struct{})}
}

func (p *pauseAt) probe(ctx context.Context, at locks.Point) error {
	if at != p.point {
		return nil
	}
	p.mu.Lock()
	p.hits++
	p.mu.Unlock()
	p.once.Do(func() { close(p.reached) })
	select {
	case <-p.resume:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
