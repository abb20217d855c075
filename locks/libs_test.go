package locks_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/locks"
)

// TestRedislockRefresh: redislock's refresh loop keeps a holder's lease
// alive for as long as its client lives, and dies with the client's
// context, as the watchdog does: the lock then runs out.
func TestRedislockRefresh(t *testing.T) {
	const ttl = 300 * time.Millisecond
	forEachBackend(t, func(t *testing.T, s *server) {
		// The refresh loop renews every ttl/2.
		quietTry(t, ttl/2, func(t *testing.T, w *stallWatch) {
			im := impl(t, "redislock")
			key := lockKey(t)
			ls := s.nodes(t, im, key, ttl, 2)
			actx, crash := context.WithCancel(holdCtx(t))
			defer crash()
			w.start()
			a := acquire(t, actx, ls[0], "node0:a")

			time.Sleep(4 * ttl) // a slow holder: four leases
			pttl := s.pttl(t, key)
			errB := tryAcquire(t, ls[1], "node1:b", refused)
			w.judge(t)
			if pttl <= 0 {
				t.Fatalf("PTTL %s = %d after %v: the refresh loop did not keep A's lease", key, pttl, 4*ttl)
			}
			checkRefused(t, "node1:b", errB)

			crash() // A's client dies; its refresh loop must die with it
			s.waitGone(t, key)
			b := acquire(t, holdCtx(t), ls[1], "node1:b")
			release(t, a, locks.ErrNotHeld)
			release(t, b, nil)
		})
	})
}

// TestRedislockClose: shutting a node down stops its refresh loops, as
// the process exiting would, and the lock runs out.
func TestRedislockClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		key := lockKey(t)
		l := s.node(t, impl(t, "redislock"), locks.Env{Key: key, TTL: shortTTL})
		acquire(t, holdCtx(t), l, "node0:a")
		done := make(chan error, 1)
		go func() { done <- l.(io.Closer).Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Close() = %v", err)
			}
		case <-time.After(patience):
			t.Fatal("Close() did not return: a refresh loop is still running")
		}
		s.waitGone(t, key)
	})
}

// TestRedsyncGivesUp: redsync's default 32 tries, 50-250 ms apart, run out
// against a lock that stays held, and the buyer gives up with
// ErrNotObtained rather than waiting for its context.
func TestRedsyncGivesUp(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		ls := s.nodes(t, impl(t, "redsync"), lockKey(t), time.Minute, 2)
		a := acquire(t, holdCtx(t), ls[0], "node0:a")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		lease, err := ls[1].Acquire(ctx, "node1:b")
		if err == nil {
			lease.Release(t.Context())
			t.Fatal("B obtained a lock that is held")
		}
		if !errors.Is(err, locks.ErrNotObtained) {
			t.Errorf("B's Acquire = %v, want %v", err, locks.ErrNotObtained)
		}
		if ctx.Err() != nil {
			t.Errorf("B waited for its context (%v); want it to give up after its tries", context.Cause(ctx))
		}
		release(t, a, nil)
	})
}

// TestRedsyncNeedsGoRedis: redsync's pool adapter needs a go-redis client;
// any other Redis is refused at once, by name.
func TestRedsyncNeedsGoRedis(t *testing.T) {
	type other struct{ locks.Redis }
	_, err := impl(t, "redsync").New(t.Context(), locks.Env{Redis: other{}, Key: lockKey(t)})
	if err == nil || !strings.Contains(err.Error(), "redsync") || !strings.Contains(err.Error(), "other") {
		t.Errorf("New with a %T = %v, want an error naming redsync and the type", other{}, err)
	}
}
