package locks_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/lockbench/lockbench/locks"
)

// checksOwner says which implementations check ownership on release. The
// others delete whatever lock is there: the sources' 误删 (deleting another
// owner's lock), kept on purpose.
var checksOwner = map[string]bool{
	"local":        true,
	"setnx":        false,
	"setnx-expire": false,
	"set-nx-ex":    false,
	"owner-check":  true,
	"lua":          true,
	"getset":       false,
	"reentrant":    true,
	"watchdog":     true,
	"spin":         true,
	"fair":         true,
	"multi":        true,
	"rw":           true,
	"renew-naive":  true,
	"fenced":       true,
	"redsync":      true,
	"redislock":    true,
	"redlock":      true,
}

// TestReleaseTwice releases a lease a second time: the lock is no longer
// its owner's.
func TestReleaseTwice(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		for _, im := range lockImpls() {
			checks, ok := checksOwner[im.Name]
			if !ok {
				t.Errorf("%s: add it to checksOwner", im.Name)
				continue
			}
			t.Run(im.Name, func(t *testing.T) {
				t.Parallel()
				l := s.node(t, im, locks.Env{Key: lockKey(t), TTL: 5000 * time.Second})
				lease := acquire(t, holdCtx(t), l, "node0:a")
				release(t, lease, nil)
				var want error // DEL of a missing key is no error
				if checks {
					want = locks.ErrNotHeld
				}
				release(t, lease, want)
			})
		}
	})
}

// TestReleaseStale lets A's lease go stale (it runs out, or A let go), lets
// B take the lock, and then has A release: an implementation that checks
// ownership refuses and B keeps the lock; the others delete B's lock.
func TestReleaseStale(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		for _, im := range lockImpls() {
			checks, ok := checksOwner[im.Name]
			if !ok {
				t.Errorf("%s: add it to checksOwner", im.Name)
				continue
			}
			t.Run(im.Name, func(t *testing.T) {
				t.Parallel()
				// A's lease is short; B's outlasts the test.
				key, ttl, bttl := lockKey(t), shortTTL, 5*time.Second
				if im.Name == "renew-naive" {
					// Seconds used as ms: a 200 ms lease for A, 5 s for B.
					ttl, bttl = 200*time.Second, 5000*time.Second
				}
				ls := []locks.Locker{
					s.node(t, im, locks.Env{Node: 0, Key: key, TTL: ttl}),
					s.node(t, im, locks.Env{Node: 1, Key: key, TTL: bttl}),
				}
				if im.Name == "local" {
					ls[1] = ls[0] // exclusive within one node only
				}
				actx, crash := context.WithCancel(holdCtx(t))
				defer crash()
				a := acquire(t, actx, ls[0], "node0:a")

				// Make A's lease stale.
				switch im.Name {
				case "local", "setnx":
					// No lease to run out: A's lease is stale once it let go.
					release(t, a, nil)
				case "getset":
					// The lease is a timestamp from A's clock; the key stays.
					time.Sleep(2 * ttl)
				case "watchdog", "spin", "fair", "multi", "rw", "redislock":
					// The watchdog (redislock's refresh loop) renews while
					// A's client lives.
					crash()
					s.waitGone(t, key)
				case "renew-naive":
					// The renewal threads belong to the node: stop it.
					ls[0].(io.Closer).Close()
					s.waitGone(t, key)
				default:
					s.waitGone(t, key)
				}

				b := acquire(t, holdCtx(t), ls[1], "node1:b")
				if !checks {
					release(t, a, nil)
					if s.exists(t, key) {
						t.Fatalf("A's release left %s in place; want B's lock deleted (the seeded 误删)", key)
					}
					// B believes it holds the lock, and C gets in too.
					c := acquire(t, holdCtx(t), ls[1], "node1:c")
					release(t, c, nil)
					return
				}
				release(t, a, locks.ErrNotHeld)
				if im.Name != "local" && !s.exists(t, key) {
					t.Fatalf("A's refused release deleted B's lock %s", key)
				}
				mustNotAcquire(t, ls[1], "node1:c", refused)
				release(t, b, nil)
			})
		}
	})
}
