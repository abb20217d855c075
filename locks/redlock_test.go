package locks_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/locks"
)

// cluster is N independent servers of one backend kind, for redlock.
type cluster []*server

// forEachCluster runs f as a parallel subtest per backend, with n servers
// of that kind.
func forEachCluster(t *testing.T, n int, f func(t *testing.T, c cluster)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c := make(cluster, n)
			for i := range c {
				addr := b.start(t)
				c[i] = &server{addr: addr, admin: redistest.Client(t, addr)}
			}
			f(t, c)
		})
	}
}

// deadAddr is a loopback address nothing listens on: a server that is down.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// node makes a redlock node with its own client of each server; the
// servers listed in down are reached at an address nothing listens on.
func (c cluster) node(t *testing.T, i int, key string, ttl time.Duration, now func() time.Time, down ...int) locks.Locker {
	t.Helper()
	servers := make([]locks.Redis, len(c))
	for k, s := range c {
		addr := s.addr
		for _, d := range down {
			if d == k {
				addr = deadAddr(t)
			}
		}
		servers[k] = redistest.Client(t, addr)
	}
	l, err := impl(t, "redlock").New(t.Context(), locks.Env{Node: i, Redis: servers[0], Servers: servers, Key: key, TTL: ttl, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// holders returns how many servers hold key.
func (c cluster) holders(t *testing.T, key string) int {
	t.Helper()
	n := 0
	for _, s := range c {
		if s.exists(t, key) {
			n++
		}
	}
	return n
}

func (c cluster) del(t *testing.T, key string, servers ...int) {
	t.Helper()
	for _, i := range servers {
		if err := c[i].admin.Del(t.Context(), key).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRedlockMutualExclusion runs 100 clients over two nodes, each with
// its own clients of five servers: never two inside, all get in.
func TestRedlockMutualExclusion(t *testing.T) {
	forEachCluster(t, locks.RedlockServers, func(t *testing.T, c cluster) {
		key := lockKey(t)
		ls := []locks.Locker{c.node(t, 0, key, 5*time.Second, nil), c.node(t, 1, key, 5*time.Second, nil)}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var inside, maxInside, entered atomic.Int64
		var wg sync.WaitGroup
		for i := range 100 {
			owner := fmt.Sprintf("node%d:%d", i%2, i)
			wg.Go(func() {
				lease, err := ls[i%2].Acquire(ctx, owner)
				if err != nil {
					t.Errorf("Acquire(%q): %v", owner, err)
					return
				}
				n := inside.Add(1)
				for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
				}
				entered.Add(1)
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := lease.Release(ctx); err != nil {
					t.Errorf("Release(%q): %v", owner, err)
				}
			})
		}
		wg.Wait()
		if got := maxInside.Load(); got != 1 {
			t.Errorf("at most %d clients inside at once, want 1", got)
		}
		if got := entered.Load(); got != 100 {
			t.Errorf("%d of 100 clients got in", got)
		}
		if got := c.holders(t, key); got != 0 {
			t.Errorf("%d servers still hold the lock after every release, want 0", got)
		}
	})
}

// TestRedlockMajority stops servers: with two of five down the lock works
// on the other three; with three down it is never obtained, and what a try
// set is deleted again.
func TestRedlockMajority(t *testing.T) {
	tests := []struct {
		name   string
		down   []int
		obtain bool
	}{
		{"two down", []int{1, 3}, true},
		{"first two down", []int{0, 1}, true},
		{"three down", []int{0, 2, 4}, false},
		{"last three down", []int{2, 3, 4}, false},
	}
	forEachCluster(t, locks.RedlockServers, func(t *testing.T, c cluster) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				key := lockKey(t)
				a := c.node(t, 0, key, 5*time.Second, nil, tt.down...)
				if !tt.obtain {
					mustNotAcquire(t, a, "a", refused)
					if got := c.holders(t, key); got != 0 {
						t.Errorf("%d live servers hold the key after failed tries, want 0 (released)", got)
					}
					return
				}
				lease := acquire(t, holdCtx(t), a, "a")
				if got, want := c.holders(t, key), locks.RedlockServers-len(tt.down); got != want {
					t.Errorf("%d servers hold the lock, want %d (every live one)", got, want)
				}
				// A node that reaches all five cannot get in.
				mustNotAcquire(t, c.node(t, 1, key, 5*time.Second, nil), "b", refused)
				release(t, lease, nil)
				if got := c.holders(t, key); got != 0 {
					t.Errorf("%d servers hold the lock after release, want 0", got)
				}
			})
		}
	})
}

// TestRedlockValidity makes every try take longer than the lease, by the
// node's clock: a majority is won each time, and each time refused for
// want of validity and deleted again.
func TestRedlockValidity(t *testing.T) {
	forEachCluster(t, locks.RedlockServers, func(t *testing.T, c cluster) {
		t.Run("too slow", func(t *testing.T) {
			key, ttl := lockKey(t), 5*time.Second
			var mu sync.Mutex
			clock := time.Now()
			slow := func() time.Time { // each reading a lease later
				mu.Lock()
				defer mu.Unlock()
				clock = clock.Add(ttl)
				return clock
			}
			mustNotAcquire(t, c.node(t, 0, key, ttl, slow), "a", refused)
			if got := c.holders(t, key); got != 0 {
				t.Errorf("%d servers hold the key of refused tries, want 0 (released on all)", got)
			}
		})
		t.Run("in time", func(t *testing.T) {
			key, ttl := lockKey(t), 5*time.Second
			lease := acquire(t, holdCtx(t), c.node(t, 0, key, ttl, nil), "a")
			v := lease.(interface{ Validity() time.Duration }).Validity()
			if drift := ttl/100 + 2*time.Millisecond; v <= 0 || v > ttl-drift {
				t.Errorf("Validity() = %v, want in (0, %v]", v, ttl-drift)
			}
			release(t, lease, nil)
		})
	})
}

// TestRedlockFaults makes the lock-level failures of the truth table
// happen: two holders at once.
func TestRedlockFaults(t *testing.T) {
	forEachCluster(t, locks.RedlockServers, func(t *testing.T, c cluster) {
		t.Run("pause past the lease", func(t *testing.T) {
			key := lockKey(t)
			a := acquire(t, holdCtx(t), c.node(t, 0, key, shortTTL, nil), "a")
			time.Sleep(2 * shortTTL) // A is paused; its lease runs out everywhere
			b := acquire(t, holdCtx(t), c.node(t, 1, key, 5*time.Second, nil), "b")
			release(t, a, locks.ErrNotHeld) // A wakes up believing it held the lock
			if got := c.holders(t, key); got != locks.RedlockServers {
				t.Errorf("A's release left B's lock on %d servers, want all %d", got, locks.RedlockServers)
			}
			release(t, b, nil)
		})
		t.Run("expire on a minority", func(t *testing.T) {
			key := lockKey(t)
			a := acquire(t, holdCtx(t), c.node(t, 0, key, 5*time.Second, nil), "a")
			c.del(t, key, 0, 1)
			mustNotAcquire(t, c.node(t, 1, key, 5*time.Second, nil), "b", refused)
			release(t, a, nil) // still a majority: three deleted
		})
		t.Run("expire on a majority", func(t *testing.T) {
			key := lockKey(t)
			a := acquire(t, holdCtx(t), c.node(t, 0, key, 5*time.Second, nil), "a")
			c.del(t, key, 0, 1, 2)
			b := acquire(t, holdCtx(t), c.node(t, 1, key, 5*time.Second, nil), "b") // A still holds two
			release(t, a, locks.ErrNotHeld)
			release(t, b, nil)
		})
		t.Run("restart of one server of a bare majority", func(t *testing.T) {
			// Kleppmann: A reaches only servers 0-2 and wins them; server 2
			// restarts without persistence (its keys gone, as FLUSHALL
			// leaves it); B wins 2-4, a majority too.
			key := lockKey(t)
			a := acquire(t, holdCtx(t), c.node(t, 0, key, 5*time.Second, nil, 3, 4), "a")
			if err := c[2].admin.FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			b := acquire(t, holdCtx(t), c.node(t, 1, key, 5*time.Second, nil), "b")
			release(t, a, locks.ErrNotHeld) // two of its servers left
			release(t, b, nil)
		})
	})
}

// TestRedlockOneServer runs redlock without Servers: a majority of one.
func TestRedlockOneServer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		key := lockKey(t)
		ls := s.nodes(t, impl(t, "redlock"), key, 5*time.Second, 2)
		a := acquire(t, holdCtx(t), ls[0], "a")
		mustNotAcquire(t, ls[1], "b", refused)
		release(t, a, nil)
		if s.exists(t, key) {
			t.Error("the key outlived its release")
		}
		if !errors.Is(a.Release(t.Context()), locks.ErrNotHeld) {
			t.Error("a second release succeeded")
		}
	})
}
