package locks_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockbench/lockbench/locks"
)

// TestGetsetClockSkew gives node B a clock 10 s ahead: B reads A's live
// lock as expired and takes it over with GETSET.
func TestGetsetClockSkew(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "getset")
		key := lockKey(t)
		na := s.node(t, im, locks.Env{Key: key}) // the source's 5 s lease
		nb := s.node(t, im, locks.Env{Node: 1, Key: key,
			Now: func() time.Time { return time.Now().Add(10 * time.Second) }})
		nc := s.node(t, im, locks.Env{Node: 2, Key: key}) // a correct clock

		a := acquire(t, holdCtx(t), na, "node0:a")
		aExpiry := s.getInt(t, key)
		// The lock is live: a node with a correct clock stays out.
		mustNotAcquire(t, nc, "node2:c", 500*time.Millisecond)

		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		b, err := nb.Acquire(ctx, "node1:b")
		if err != nil {
			t.Fatalf("B (clock +10 s) Acquire() = %v; want it to steal A's live lock", err)
		}
		if got := s.getInt(t, key); got <= aExpiry {
			t.Errorf("lock expiry after B = %d, want B's, later than A's %d", got, aExpiry)
		}
		// A never released and was never told: both hold the lock.
		release(t, b, nil)
		release(t, a, nil)
	})
}

// getHook is a node's client that runs a hook before each GET, so that a
// test can interleave other clients' steps with getset's GET/GETSET pair.
type getHook struct {
	locks.Redis
	mu     sync.Mutex
	n      int
	before func(n int) // n counts GETs from 1
}

func (h *getHook) Get(ctx context.Context, key string) *redis.StringCmd {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	if h.before != nil {
		h.before(n)
	}
	return h.Redis.Get(ctx, key)
}

// TestGetsetUnlockRace replays, step by step, what breaks getset under
// contention with no fault at all (the registry's "Measured" note): the
// source counts a GET that finds no key (A has just unlocked) as an expired
// lock. W's SETNX fails while A holds; A unlocks; W's check GET finds
// nothing; then either C takes the lock with SETNX before W's second GET,
// and W's GETSET sees the value it expects and W takes C's live lock; or
// no one does, and W's GETSET writes a fresh timestamp without taking the
// lock, which then blocks everyone, W included, for a whole lease.
func TestGetsetUnlockRace(t *testing.T) {
	tests := []struct {
		name      string
		cTakes    bool // C takes the lock between W's two GETs
		wantWGets bool
	}{
		{name: "steals the next holder's lock", cTakes: true, wantWGets: true},
		{name: "writes a lock no one holds", cTakes: false, wantWGets: false},
	}
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "getset")
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				key := lockKey(t)
				na := s.node(t, im, locks.Env{Key: key})
				nc := s.node(t, im, locks.Env{Node: 2, Key: key})
				hook := &getHook{Redis: s.admin}
				nw := s.node(t, im, locks.Env{Node: 1, Key: key, Redis: hook})

				a := acquire(t, holdCtx(t), na, "node0:a")
				var c locks.Lease
				hook.before = func(n int) {
					switch {
					case n == 1: // W's check: A unlocks just before
						release(t, a, nil)
					case n == 2 && tt.cTakes: // W's expect: C got in just before
						c = acquire(t, holdCtx(t), nc, "node2:c")
					}
				}
				// W's first round runs the interleaving; the context ends
				// within its second round.
				ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
				defer cancel()
				w, err := nw.Acquire(ctx, "node1:w")
				hook.before = nil

				if got := err == nil; got != tt.wantWGets {
					t.Fatalf("W's Acquire() = %v; want success %v", err, tt.wantWGets)
				}
				if tt.cTakes {
					// C never lost its lock as far as it knows: two holders.
					release(t, w, nil)
					release(t, c, nil)
					return
				}
				// Nobody holds the lock, yet it is taken for a lease.
				if !s.exists(t, key) {
					t.Fatalf("%s is gone; want W's stray timestamp", key)
				}
				mustNotAcquire(t, nc, "node2:c", 500*time.Millisecond)
			})
		}
	})
}
