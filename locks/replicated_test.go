package locks_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/locks"
	"github.com/redis/go-redis/v9"
)

// TestWaitNeverObtainedWithoutReplica: on a server without a replica
// (the embedded one, a lone redis-server) WAIT answers 0, so lua-wait
// never grants the lock, and gives back every lock it set.
func TestWaitNeverObtainedWithoutReplica(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		key := lockKey(t)
		l := s.node(t, impl(t, "lua-wait"), locks.Env{Key: key, TTL: 10 * time.Second})
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		if _, err := l.Acquire(ctx, "owner"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire without a replica = %v, want the deadline (never obtained)", err)
		}
		if n, err := s.admin.Exists(t.Context(), key).Result(); err != nil || n != 0 {
			t.Errorf("the lock's key left behind: EXISTS = %d, %v", n, err)
		}
	})
}

// TestWaitOnSentinel: with a replica, lua-wait excludes as lua does;
// with replication held, it is never granted and leaves no key.
func TestWaitOnSentinel(t *testing.T) {
	top := redistest.StartSentinel(t)
	key := lockKey(t)
	client := func() *redis.Client {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: top.MasterName(), SentinelAddrs: top.SentinelAddrs(), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	im := impl(t, "lua-wait")
	newNode := func(n int) locks.Locker {
		l, err := im.New(t.Context(), locks.Env{Node: n, Redis: client(), Key: key, TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	ls := []locks.Locker{newNode(0), newNode(1)}
	var inside, maxInside atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := ls[i%2].Acquire(t.Context(), "client"+string(rune('A'+i)))
			if err != nil {
				t.Errorf("Acquire: %v", err)
				return
			}
			n := inside.Add(1)
			for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			if err := lease.Release(t.Context()); err != nil {
				t.Errorf("Release: %v", err)
			}
		}()
	}
	wg.Wait()
	if got := maxInside.Load(); got != 1 {
		t.Errorf("at most %d inside at once, want 1", got)
	}

	top.HoldReplication(true)
	defer top.HoldReplication(false)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if _, err := ls[0].Acquire(ctx, "held"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire with replication held = %v, want the deadline (never obtained)", err)
	}
	primary, err := top.PrimaryAddr(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := redistest.Client(t, primary).Exists(t.Context(), key).Result(); err != nil || n != 0 {
		t.Errorf("the lock's key left on the primary: EXISTS = %d, %v", n, err)
	}
}
