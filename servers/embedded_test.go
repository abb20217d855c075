package servers_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/health"
	"github.com/lockbench/lockbench/servers"
)

// embedded starts an embedded server and a client of it, both closed when
// the test ends.
func embedded(t *testing.T) (*servers.Embedded, *redis.Client) {
	t.Helper()
	e, err := servers.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c := redis.NewClient(&redis.Options{Addr: e.Addr(), Protocol: 2, MaxRetries: -1, PoolSize: 64})
	t.Cleanup(func() { c.Close() })
	return e, c
}

// burn keeps every core busy until the test ends, so that the server's
// ticking goroutine waits for a core as on a busy machine.
func burn(t *testing.T) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for x := 0; !stop.Load(); x++ {
				if x%1_000_000 == 0 {
					runtime.Gosched() // cooperative, yet always ready to run
				}
			}
		})
	}
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
}

// TestEmbeddedLeaseEarlyWithinStep: a lease on the embedded server runs
// out early by no more than the longest step of its clock that
// WatchClock measured (and the millisecond a lease is set in), with
// every core kept busy beside it so that the steps stretch. Each lease is
// set by SET NX PX from a try sent at t0, and taken over by another's SET
// NX answered at t1: it ran out by t1, so it lived at most t1-t0, and
// the lease less that is how early it ran out at least.
func TestEmbeddedLeaseEarlyWithinStep(t *testing.T) {
	const lease = 300 * time.Millisecond
	srv, c := embedded(t)
	burn(t)
	watch := srv.WatchClock()
	ctx := t.Context()
	var mu sync.Mutex
	var early time.Duration // the most a lease ran out early
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			key := fmt.Sprint("lease:", i)
			for round := range 5 {
				t0 := time.Now()
				if ok, err := c.SetNX(ctx, key, "first", lease).Result(); err != nil || !ok {
					errs <- fmt.Errorf("%s round %d: first SET NX: %v, %v", key, round, ok, err)
					return
				}
				for {
					ok, err := c.SetNX(ctx, key, "second", time.Millisecond).Result()
					t1 := time.Now()
					if err != nil {
						errs <- err
						return
					}
					if ok {
						mu.Lock()
						early = max(early, lease-t1.Sub(t0))
						mu.Unlock()
						break
					}
				}
				// The second lease runs out in a millisecond, so the next
				// round's first SET NX finds the key gone.
				for {
					n, err := c.Exists(ctx, key).Result()
					if err != nil {
						errs <- err
						return
					}
					if n == 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	step := watch()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("the clock's longest step %v; a lease ran out early by %v at most", step, early)
	if step <= 0 {
		t.Fatalf("no step of the clock measured")
	}
	if step >= lease {
		t.Logf("a step as long as the lease: a lease may have run out at once, nothing to judge")
	}
	if early > step+time.Millisecond {
		t.Errorf("a lease ran out %v early, beyond the clock's longest step %v (and a millisecond)", early, step)
	}
}

// TestEmbeddedPauseSpareScripts: a pause holds a client's command, never
// a running script's own calls: a script under way when the pause begins
// ends, and the clock goes on in short steps meanwhile (a script held
// inside the server's lock would stop it for the whole pause).
func TestEmbeddedPauseSpareScripts(t *testing.T) {
	srv, c := embedded(t)
	ctx := t.Context()
	// Each script makes many calls, so that the pause begins inside some.
	script := redis.NewScript(`for i = 1, 2000 do redis.call('incr', KEYS[1]) end return redis.call('get', KEYS[1])`)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := script.Run(ctx, c, []string{fmt.Sprint("n:", i)}).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // scripts under way
	t0 := time.Now()
	mon := health.Start(func() int64 { return int64(time.Since(t0)) }, nil, nil)
	watch := srv.WatchClock()
	if err := srv.Pause(ctx, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // past the pause, by the pause's own clock: no judgement on it
	step := watch()
	hl := mon.Stop(-1)
	close(stop)
	wg.Wait()
	// Only a step that began before the pause and ended after it spans
	// it: a held script would stop the clock for the pause's 500 ms.
	if st, err := c.Get(ctx, "n:0").Int(); err != nil || st == 0 {
		t.Errorf("the scripts made no calls: %v, %v", st, err)
	}
	switch stood := time.Duration(max(hl.StallMax, hl.SchedMax)); {
	case step < 500*time.Millisecond:
	case stood >= 400*time.Millisecond:
		t.Logf("the process stood still %v at once: a clock step of %v says nothing of the pause", stood, step)
	default:
		t.Errorf("the clock stood still %v across a pause of 500 ms: a script was held inside the server's lock", step)
	}
}

// TestEmbeddedPause: a command sent during a pause is answered only when
// the pause is over, and keys run out meanwhile in real time, as on a
// real server under CLIENT PAUSE ALL.
func TestEmbeddedPause(t *testing.T) {
	srv, c := embedded(t)
	ctx := t.Context()
	watch := srv.WatchClock()
	if err := c.Set(ctx, "short", "v", 100*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	before := time.Now() // the pause ends a second after this, or later
	if err := srv.Pause(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	err := c.Get(ctx, "short").Err()
	answered := time.Since(before)
	step := watch()
	if answered < time.Second {
		t.Errorf("answered %v after a pause of 1s began", answered)
	}
	switch {
	case step >= 900*time.Millisecond:
		t.Logf("the clock stood still %v at once: whether the key ran out is not judged", step)
	case !errors.Is(err, redis.Nil):
		t.Errorf("GET of a 100 ms key after a 1 s pause: %v, want it gone", err)
	}
	if err := c.Ping(context.WithoutCancel(ctx)).Err(); err != nil {
		t.Errorf("ping after the pause: %v", err)
	}

	// A script is held as any command (the embedded server runs it itself,
	// see servers/scripts.go), by EVAL as by EVALSHA.
	script := redis.NewScript("return redis.call('INCR', KEYS[1])")
	if err := script.Load(ctx, c).Err(); err != nil {
		t.Fatal(err)
	}
	for _, run := range []func() error{
		func() error { return script.EvalSha(ctx, c, []string{"n"}).Err() },
		func() error { return script.Eval(ctx, c, []string{"n"}).Err() },
	} {
		before := time.Now()
		if err := srv.Pause(ctx, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		err := run()
		if answered := time.Since(before); err != nil || answered < 300*time.Millisecond {
			t.Errorf("a script during a pause of 300ms: %v, answered after %v", err, answered)
		}
	}
}

// TestEmbeddedConnections: a client of the process reaches the embedded
// server over a socket pair, is closed by a restart as a TCP client is
// (its pool takes a new connection, and the restarted server has no
// data), and is refused once the server is closed; a client by address
// reaches it over TCP.
func TestEmbeddedConnections(t *testing.T) {
	ctx := context.Background()
	e, err := servers.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := redis.NewClient(e.Options())
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	conn := c.Conn()
	defer conn.Close()
	if err := conn.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	tcp := redis.NewClient(servers.ClientOptions(e.Addr(), ""))
	defer tcp.Close()
	if v, err := tcp.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("by address: %q, %v; want v", v, err)
	}

	if err := e.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conn.Ping(ctx).Err(); err == nil {
		t.Error("a connection held across the restart still answers; want it closed")
	}
	if v, err := c.Get(ctx, "k").Result(); err != redis.Nil {
		t.Errorf("after the restart: %q, %v; want a new connection and no key", v, err)
	}

	e2, err := servers.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close() // again: a second Close does nothing
	c2 := redis.NewClient(e2.Options())
	defer c2.Close()
	if err := c2.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	e2.Close()
	c3 := redis.NewClient(e2.Options())
	defer c3.Close()
	if err := c3.Ping(ctx).Err(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a closed server: %v; want connection refused", err)
	}
}
