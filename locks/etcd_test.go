package locks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
)

var etcdImpls = []string{"etcd", "etcd-fenced"}

// etcdTTL is a session TTL meant to run out during a test: etcd's
// shortest on lockbench's cluster.
const etcdTTL = 2 * time.Second

// etcdNode makes one node's Locker on e, closed when the test ends.
func etcdNode(t *testing.T, im locks.Impl, e *servers.Etcd, key string, ttl time.Duration, g *gate) locks.Locker {
	t.Helper()
	et := &locks.Remote{Addrs: e.Endpoints()}
	if g != nil {
		et.Wait = g.wait
	}
	l, err := im.New(t.Context(), locks.Env{Key: key, TTL: ttl, Remote: et})
	if err != nil {
		t.Fatalf("%s: New: %v", im.Name, err)
	}
	t.Cleanup(func() { l.(locks.Closer).Close() })
	return l
}

func TestEtcdNeedsACluster(t *testing.T) {
	for _, name := range etcdImpls {
		if _, err := impl(t, name).New(t.Context(), locks.Env{Key: "k"}); err == nil {
			t.Errorf("%s: New without etcd succeeded", name)
		}
	}
}

// TestEtcdMutualExclusion: buyers of two nodes, many at once on each
// (each on a session of its own), never hold together; etcd-fenced's
// tokens rise from one holder to the next.
func TestEtcdMutualExclusion(t *testing.T) {
	e := servertest.Etcd.Start(t)
	for _, name := range etcdImpls {
		t.Run(name, func(t *testing.T) {
			im := impl(t, name)
			key := lockKey(t)
			nodes := []locks.Locker{etcdNode(t, im, e, key, 0, nil), etcdNode(t, im, e, key, 0, nil)}
			var (
				inside, overlaps atomic.Int32
				mu               sync.Mutex
				last             uint64
				stale            int
				wg               sync.WaitGroup
			)
			for i := range 16 {
				wg.Go(func() {
					l := nodes[i%2]
					for j := range 3 {
						lease := acquire(t, holdCtx(t), l, fmt.Sprintf("node%d:%d:%d", i%2, i, j))
						if inside.Add(1) > 1 {
							overlaps.Add(1)
						}
						mu.Lock()
						if im.Fenced && lease.Token() <= last {
							stale++
						}
						last = lease.Token()
						mu.Unlock()
						inside.Add(-1)
						release(t, lease, nil)
					}
				})
			}
			wg.Wait()
			if n := overlaps.Load(); n != 0 {
				t.Errorf("%d overlapping holdings, want none", n)
			}
			if stale != 0 {
				t.Errorf("%d tokens not above the previous holder's", stale)
			}
			if im.Fenced && last == 0 {
				t.Error("etcd-fenced handed out no token")
			}
		})
	}
}

// TestEtcdPausedHolder is Jepsen's finding on etcd 3.4.3: a holder whose
// node is paused past its session's TTL stops keeping its lease alive;
// the lease expires and another node takes the lock while the first
// still believes it holds it. Its release then finds the lock gone. With
// etcd-fenced the second holder's token is above the first's, so the
// fenced store refuses the first's late writes.
func TestEtcdPausedHolder(t *testing.T) {
	e := servertest.Etcd.Start(t)
	for _, name := range etcdImpls {
		t.Run(name, func(t *testing.T) {
			// The second holder's session must live from its grant to its
			// release: etcd's client renews it etcdTTL/3 after the last
			// renewal, at the next of its keep-alive loop's 500 ms ticks.
			quietTry(t, etcdTTL-etcdTTL/3-500*time.Millisecond, func(t *testing.T, w *stallWatch) {
				im := impl(t, name)
				key := lockKey(t)
				g := &gate{}
				a := etcdNode(t, im, e, key, etcdTTL, g)
				b := etcdNode(t, im, e, key, etcdTTL, nil)
				first := acquireWatched(t, w, holdCtx(t), a, "node0:a")
				g.close()
				// No bound but the test's patience: b gets the lock only
				// once a's lease has run out on the server, while b's own
				// session must live on.
				second := acquireWatched(t, w, holdCtx(t), b, "node1:b")
				g.open()
				errFirst := first.Release(holdCtx(t))
				errSecond := second.Release(t.Context())
				w.judge(t)
				if im.Fenced && second.Token() <= first.Token() {
					t.Errorf("second holder's token %d not above the paused holder's %d", second.Token(), first.Token())
				}
				if !errors.Is(errFirst, locks.ErrNotHeld) {
					t.Errorf("the paused holder's Release() = %v, want ErrNotHeld", errFirst)
				}
				if errSecond != nil {
					t.Errorf("the second holder's Release() = %v, want <nil>", errSecond)
				}
				// The paused node locks again, on a fresh session.
				release(t, acquire(t, holdCtx(t), a, "node0:c"), nil)
			})
		})
	}
}

// TestEtcdCrashedHolder: a holder whose context ends (its process died)
// never releases; its lease runs out and another node gets the lock.
func TestEtcdCrashedHolder(t *testing.T) {
	e := servertest.Etcd.Start(t)
	im := impl(t, "etcd")
	key := lockKey(t)
	a := etcdNode(t, im, e, key, etcdTTL, nil)
	b := etcdNode(t, im, e, key, etcdTTL, nil)
	ctx, crash := context.WithCancelCause(t.Context())
	first, err := a.Acquire(ctx, "node0:a")
	if err != nil {
		t.Fatal(err)
	}
	crash(locks.ErrCrashed)
	second := acquire(t, holdCtx(t), b, "node1:b")
	if err := first.Release(t.Context()); !errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("a crashed holder's Release() = %v, want ErrNotHeld", err)
	}
	release(t, second, nil)
}
