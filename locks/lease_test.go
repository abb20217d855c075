package locks_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/lockbench/lockbench/locks"
)

// TestSlowHolder holds the lock for four leases while a second owner tries
// for a second. The watchdog and redislock's refresh loop renew the
// holder's lease; lua's and redsync's fixed leases run out and let the
// second owner in (the seeded failure).
func TestSlowHolder(t *testing.T) {
	// A lease long enough that most of a busy machine's stalls do not
	// outlast it between two renewals (a try that stalls longer is not
	// judged, see quietTry); B tries for most of A's hold.
	const (
		ttl  = 500 * time.Millisecond
		hold = 2 * time.Second
		wait = 1500 * time.Millisecond
	)
	tests := []struct {
		impl       string
		secondGets bool // whether the second owner gets in while A holds
	}{
		{impl: "watchdog", secondGets: false},
		{impl: "spin", secondGets: false},
		{impl: "fair", secondGets: false},
		{impl: "multi", secondGets: false},
		{impl: "rw", secondGets: false},
		{impl: "lua", secondGets: true},
		{impl: "redislock", secondGets: false},
		{impl: "redsync", secondGets: true},
	}
	forEachBackend(t, func(t *testing.T, s *server) {
		for _, tt := range tests {
			t.Run(tt.impl, func(t *testing.T) {
				t.Parallel()
				// The leases renewed are redislock's (every ttl/2) and the
				// watchdog's (every ttl/3); B's wait outlasts a lua or
				// redsync lease by more.
				quietTry(t, ttl/2, func(t *testing.T, w *stallWatch) {
					slowHolder(t, w, s, tt.impl, tt.secondGets, ttl, hold, wait)
				})
			})
		}
	})
}

// slowHolder is one try of TestSlowHolder: A, on a ttl lease, holds for
// hold while B tries for wait; secondGets says whether B gets in.
func slowHolder(t *testing.T, w *stallWatch, s *server, name string, secondGets bool, ttl, hold, wait time.Duration) {
	im := impl(t, name)
	key := lockKey(t)
	ls := []locks.Locker{
		s.node(t, im, locks.Env{Node: 0, Key: key, TTL: ttl}),
		// B's lease outlasts the test.
		s.node(t, im, locks.Env{Node: 1, Key: key, TTL: 5 * time.Second}),
	}
	w.start()
	held := time.After(hold)
	a := acquire(t, holdCtx(t), ls[0], "node0:a")

	type result struct {
		lease locks.Lease
		err   error
	}
	second := make(chan result, 1)
	// lua's and redsync's leases do not depend on the acquiring
	// context, so B's lease outlives bctx.
	bctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	go func() {
		l, err := ls[1].Acquire(bctx, "node1:b")
		second <- result{l, err}
	}()
	<-held
	got := <-second

	if !secondGets {
		if got.err == nil {
			got.lease.Release(t.Context())
		}
		pttl := s.pttl(t, key)
		errA := a.Release(t.Context())
		w.judge(t)
		if got.err == nil {
			t.Fatalf("B obtained the lock while A held it past %d leases", hold/ttl)
		}
		if !errors.Is(got.err, context.DeadlineExceeded) {
			t.Errorf("B's Acquire = %v, want %v", got.err, context.DeadlineExceeded)
		}
		if pttl <= 0 {
			t.Errorf("PTTL %s = %d after %v: A's lease was not kept alive", key, pttl, hold)
		}
		if errA != nil {
			t.Errorf("A's Release() = %v, want <nil>", errA)
		}
		b := acquire(t, holdCtx(t), ls[1], "node1:b")
		release(t, b, nil)
		return
	}
	w.judge(t)
	if got.err != nil {
		t.Fatalf("B's Acquire = %v; want B in once A's %v lease ran out", got.err, ttl)
	}
	// A never released: two owners believe they hold the lock.
	release(t, a, locks.ErrNotHeld)
	release(t, got.lease, nil)
}

// TestWatchdogAfterCrashedContext: the watchdog lives in the acquiring
// context, so when a client's context ends the watchdog stops and the lease
// runs out, as the design says. The same owner acquiring again on that node
// must then get a running watchdog.
// (A watchdog that ended with its context once left its entry behind, so
// the next acquisition only counted a level on a dead watchdog and lost
// its lease after one TTL.)
func TestWatchdogAfterCrashedContext(t *testing.T) {
	const ttl = 900 * time.Millisecond
	forEachBackend(t, func(t *testing.T, s *server) {
		// The watchdog renews every ttl/3.
		quietTry(t, ttl-ttl/3, func(t *testing.T, w *stallWatch) {
			im := impl(t, "watchdog")
			key := lockKey(t)
			ls := s.nodes(t, im, key, ttl, 2)
			ctx, crash := context.WithCancel(holdCtx(t))
			acquire(t, ctx, ls[0], "node0:a")
			crash() // the client's context ends; its lease runs out
			s.waitGone(t, key)

			w.start()
			a := acquire(t, holdCtx(t), ls[0], "node0:a")
			// The new watchdog runs: it renews the lease, three times a
			// lease, for as long as A holds it.
			s.waitRenewals(t, w, key, 3)
			errB := tryAcquire(t, ls[1], "node1:b", refused)
			errA := a.Release(t.Context())
			w.judge(t)
			checkRefused(t, "node1:b", errB)
			if errA != nil {
				t.Errorf("A's Release() = %v, want <nil>", errA)
			}
		})
	})
}

// TestFencedTokens checks that fencing tokens grow with every acquisition,
// also across an expired lease.
func TestFencedTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "fenced")
		t.Run("sequential", func(t *testing.T) {
			t.Parallel()
			ls := s.nodes(t, im, lockKey(t), 5*time.Second, 2)
			var last uint64
			for i := range 6 {
				l := acquire(t, holdCtx(t), ls[i%2], "owner")
				if got := l.Token(); got <= last {
					t.Errorf("acquisition %d: Token() = %d, want > %d", i, got, last)
				} else {
					last = got
				}
				release(t, l, nil)
			}
		})
		t.Run("expired", func(t *testing.T) {
			t.Parallel()
			key := lockKey(t)
			ls := s.nodes(t, im, key, shortTTL, 2)
			a := acquire(t, holdCtx(t), ls[0], "node0:a")
			s.waitGone(t, key)
			b := acquire(t, holdCtx(t), ls[1], "node1:b")
			if a.Token() == 0 || b.Token() <= a.Token() {
				t.Errorf("tokens: A %d then B %d, want 0 < A < B", a.Token(), b.Token())
			}
			release(t, a, locks.ErrNotHeld)
			release(t, b, nil)
		})
	})
}

// TestSetNXNoExpiry: a holder of the setnx lock that dies never unlocks,
// and the lock has no expiry: everyone else waits forever.
func TestSetNXNoExpiry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		key := lockKey(t)
		ls := s.nodes(t, impl(t, "setnx"), key, 5*time.Second, 2)
		acquire(t, holdCtx(t), ls[0], "node0:dies") // and never releases
		mustNotAcquire(t, ls[1], "node1:b", 500*time.Millisecond)
		if got := s.pttl(t, key); got != -1 {
			t.Errorf("PTTL %s = %d, want -1 (no expiry)", key, got)
		}
	})
}

// TestSetNXExpireCrash kills the client between SETNX and EXPIRE: the lock
// is left without an expiry.
func TestSetNXExpireCrash(t *testing.T) {
	errCrash := errors.New("test: client crashed")
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "setnx-expire")
		t.Run("crash", func(t *testing.T) {
			t.Parallel()
			key := lockKey(t)
			crashing := s.node(t, im, locks.Env{Key: key, TTL: shortTTL,
				Probe: func(_ context.Context, p locks.Point) error {
					if p == locks.AfterSetNX {
						return errCrash
					}
					return nil
				}})
			other := s.node(t, im, locks.Env{Node: 1, Key: key, TTL: shortTTL})
			if _, err := crashing.Acquire(t.Context(), "node0:a"); !errors.Is(err, errCrash) {
				t.Fatalf("Acquire() = %v, want %v", err, errCrash)
			}
			if got := s.pttl(t, key); got != -1 {
				t.Errorf("PTTL %s = %d, want -1 (a lock with no expiry)", key, got)
			}
			// Well past the lease the lock is still there: a deadlock.
			mustNotAcquire(t, other, "node1:b", 2*shortTTL)
		})
		t.Run("no crash", func(t *testing.T) {
			t.Parallel()
			key := lockKey(t)
			l := s.node(t, im, locks.Env{Key: key, TTL: 5 * time.Second})
			acquire(t, holdCtx(t), l, "node0:a")
			if got := s.pttl(t, key); got <= 0 {
				t.Errorf("PTTL %s = %d, want a lease", key, got)
			}
		})
	})
}

// TestPauseBeforeDelete pauses A's release just before its delete until
// A's lease has run out and B holds the lock. owner-check's unlock has
// already compared the owner, so its DEL deletes B's lock (the seeded 误删
// atomicity bug); lua's compare-and-delete checks and deletes in one step
// when it finally runs, so B keeps the lock.
func TestPauseBeforeDelete(t *testing.T) {
	tests := []struct {
		impl   string
		atomic bool // the unlock checks and deletes in one step
	}{
		{impl: "owner-check", atomic: false},
		{impl: "lua", atomic: true},
	}
	forEachBackend(t, func(t *testing.T, s *server) {
		for _, tt := range tests {
			t.Run(tt.impl, func(t *testing.T) {
				t.Parallel()
				im := impl(t, tt.impl)
				key := lockKey(t)
				pause := newPauseAt(locks.BeforeDelete)
				na := s.node(t, im, locks.Env{Key: key, TTL: shortTTL, Probe: pause.probe})
				nb := s.node(t, im, locks.Env{Node: 1, Key: key, TTL: 5 * time.Second})
				a := acquire(t, holdCtx(t), na, "node0:a")

				released := make(chan error, 1)
				go func() { released <- a.Release(t.Context()) }()
				select {
				case <-pause.reached:
				case <-time.After(patience):
					t.Fatal("A's release never reached BeforeDelete")
				}
				s.waitGone(t, key)
				b := acquire(t, holdCtx(t), nb, "node1:b")
				close(pause.resume)
				err := <-released

				if !tt.atomic {
					if err != nil {
						t.Errorf("A's Release() = %v, want nil (it passed its owner check)", err)
					}
					if s.exists(t, key) {
						t.Fatalf("%s survived A's paused release; want B's lock deleted", key)
					}
					release(t, b, locks.ErrNotHeld)
					return
				}
				if !errors.Is(err, locks.ErrNotHeld) {
					t.Errorf("A's Release() = %v, want %v", err, locks.ErrNotHeld)
				}
				if !s.exists(t, key) {
					t.Fatalf("A's release deleted B's lock %s", key)
				}
				release(t, b, nil)
			})
		}
	})
}

// naiveLease is renew-naive's --ttl for a 2 s lease: the source passes the
// lease's seconds to PEXPIRE as milliseconds.
const naiveLease = 2000 * time.Second

// naiveMargin is how long a stall may last before a renew-naive lease,
// sent as 2 s and renewed every second, can lapse between two renewals.
const naiveMargin = time.Second

// TestRenewNaive shows source 001's renewal thread renewing locks whoever
// holds them, so that a lock whose holder died is held forever.
func TestRenewNaive(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "renew-naive")
		t.Run("dead holder", func(t *testing.T) {
			t.Parallel()
			// naiveLease is sent as a 2 s lease, renewed every second:
			// a 30 ms one (--ttl=30s) would test the machine's
			// scheduling as much as the renewal.
			quietTry(t, naiveMargin, func(t *testing.T, w *stallWatch) {
				key := lockKey(t)
				ls := s.nodes(t, im, key, naiveLease, 2)
				a := acquire(t, holdCtx(t), ls[0], "node0:a")
				release(t, a, nil)
				acquire(t, holdCtx(t), ls[1], "node1:b") // B dies holding it
				// Renewed again and again although its holder is dead.
				s.waitRenewals(t, w, key, 2)
				errC := tryAcquire(t, ls[0], "node0:c", refused)
				w.judge(t)
				checkRefused(t, "node0:c", errC)
			})
		})

		// A's node renews B's lock after A let go. B's node is shut down,
		// so only A's renewal thread can keep B's lock alive.
		tests := []struct {
			name      string
			closeA    bool
			wantAlive bool
		}{
			{name: "A's node renews B's lock", closeA: false, wantAlive: true},
			{name: "no renewal, lock expires", closeA: true, wantAlive: false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				quietTry(t, naiveMargin, func(t *testing.T, w *stallWatch) {
					renewNaiveNodeGone(t, w, s, im, tt.closeA, tt.wantAlive)
				})
			})
		}
	})
}

// renewNaiveNodeGone is one try of TestRenewNaive's cases where B's node
// is shut down while B holds the lock: A's node, unless closeA, renews B's
// lock, which is then alive (wantAlive) or runs out.
func renewNaiveNodeGone(t *testing.T, w *stallWatch, s *server, im locks.Impl, closeA, wantAlive bool) {
	key := lockKey(t)
	// A 2 s lease renewed every second. Once A's renewal thread has been
	// seen to renew, it sleeps for a second: A releases and B acquires
	// meanwhile.
	ls := s.nodes(t, im, key, naiveLease, 2)
	a := acquire(t, holdCtx(t), ls[0], "node0:a")
	s.waitRenewals(t, w, key, 1)
	release(t, a, nil)
	acquire(t, holdCtx(t), ls[1], "node1:b")
	ls[1].(io.Closer).Close() // B's node is gone
	if closeA {
		ls[0].(io.Closer).Close()
	}
	if !wantAlive {
		s.waitGone(t, key)
		return
	}
	// Only A's thread is left to renew it.
	s.waitRenewals(t, w, key, 2)
	owners := s.hashOwners(t, key)
	w.judge(t)
	if owners["node1:b"] != "1" || len(owners) != 1 {
		t.Errorf("lock holders = %v, want B's alone", owners)
	}
}
