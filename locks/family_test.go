package locks_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/locks"
)

// multiKeys are the lock keys of n items under the test's prefix.
func multiKeys(t *testing.T, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s:%d", lockKey(t), i)
	}
	return keys
}

// TestMultiAllOrNone: when one of the cart's locks is held by another
// owner, multi gets none of them and leaves none held; once it is free,
// multi gets them all, and its release frees them all.
func TestMultiAllOrNone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "multi")
		keys := multiKeys(t, 3)
		ttl := 5 * time.Second
		m := s.node(t, im, locks.Env{Node: 0, Key: keys[0], Keys: keys, TTL: ttl})
		// The other owner holds the middle lock through the watchdog lock,
		// the RLock each of multi's locks is.
		other := s.node(t, impl(t, "watchdog"), locks.Env{Node: 1, Key: keys[1], TTL: ttl})
		ctx := holdCtx(t)
		held := acquire(t, ctx, other, "node1:other")

		_, err := locks.TryAll(ctx, m, "node0:cart", keys, 300*time.Millisecond)
		if !errors.Is(err, locks.ErrNotObtained) {
			t.Fatalf("TryAll with %s held by another = %v, want %v", keys[1], err, locks.ErrNotObtained)
		}
		// The round took the first lock, waited for the second and gave
		// the first back: nothing of the cart's owner is left.
		for _, k := range []string{keys[0], keys[2]} {
			if s.exists(t, k) {
				t.Errorf("%s held after a failed round: %v", k, s.hashOwners(t, k))
			}
		}
		if got := s.hashOwners(t, keys[1]); len(got) != 1 || got["node1:other"] != "1" {
			t.Errorf("%s = %v, want the other owner's alone", keys[1], got)
		}

		// A caller that stops waiting (lock() cut by its context) takes
		// nothing with it either.
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = m.(locks.MultiLocker).AcquireAll(short, "node0:cart", keys)
		cancel()
		if err == nil {
			t.Fatal("AcquireAll obtained a cart whose middle lock is held")
		}
		for _, k := range []string{keys[0], keys[2]} {
			if s.exists(t, k) {
				t.Errorf("%s held after AcquireAll gave up: %v", k, s.hashOwners(t, k))
			}
		}

		release(t, held, nil)
		lease := acquire(t, ctx, m, "node0:cart")
		for _, k := range keys {
			if got := s.hashOwners(t, k); got["node0:cart"] != "1" || len(got) != 1 {
				t.Errorf("%s = %v, want the cart's owner alone", k, got)
			}
		}
		release(t, lease, nil)
		for _, k := range keys {
			if s.exists(t, k) {
				t.Errorf("%s still held after the cart's release", k)
			}
		}
	})
}

// TestMultiCartsExclude: carts of random items over two nodes, each cart
// taking its items' locks together in sorted order: no item ever has two
// holders, and every cart gets in (no deadlock).
func TestMultiCartsExclude(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "multi")
		keys := multiKeys(t, 4)
		ls := make([]locks.MultiLocker, 2)
		for i := range ls {
			ls[i] = s.node(t, im, locks.Env{Node: i, Key: keys[0], Keys: keys, TTL: 30 * time.Second}).(locks.MultiLocker)
		}
		ctx := t.Context()
		var inside [4]atomic.Int64
		var overlaps, entered atomic.Int64
		var wg sync.WaitGroup
		const carts = 60
		for c := range carts {
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			items := rng.Perm(4)[:1+rng.IntN(3)]
			slices.Sort(items)
			cart := make([]string, len(items))
			for j, it := range items {
				cart[j] = keys[it]
			}
			owner := fmt.Sprintf("node%d:%d", c%2, c)
			wg.Go(func() {
				lease, err := ls[c%2].AcquireAll(ctx, owner, cart)
				if err != nil {
					t.Errorf("AcquireAll(%q, %v): %v", owner, items, err)
					return
				}
				entered.Add(1)
				for _, it := range items {
					if inside[it].Add(1) > 1 {
						overlaps.Add(1)
					}
				}
				time.Sleep(time.Millisecond)
				for _, it := range items {
					inside[it].Add(-1)
				}
				if err := lease.Release(ctx); err != nil {
					t.Errorf("Release(%q): %v", owner, err)
				}
			})
		}
		wg.Wait()
		if n := overlaps.Load(); n > 0 {
			t.Errorf("%d times an item had two holders", n)
		}
		if n := entered.Load(); n != carts {
			t.Errorf("%d of %d carts got in", n, carts)
		}
	})
}

// TestRWReadersShareWriterExcludes: readers of two nodes hold the lock at
// once, each level with its lease key; a writer waits while they do; once
// it holds the lock, readers and writers wait; its release lets readers in.
func TestRWReadersShareWriterExcludes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "rw")
		key := lockKey(t)
		ls := s.nodes(t, im, key, 5*time.Second, 2)
		r0, r1 := ls[0].(locks.ReadLocker), ls[1].(locks.ReadLocker)
		ctx := holdCtx(t)
		readA, err := r0.AcquireRead(ctx, "node0:a")
		if err != nil {
			t.Fatal(err)
		}
		readB, err := r1.AcquireRead(ctx, "node1:b")
		if err != nil {
			t.Fatal(err)
		}
		if got := s.hashOwners(t, key); got["mode"] != "read" || got["node0:a"] != "1" || got["node1:b"] != "1" {
			t.Errorf("%s = %v, want read mode with both readers", key, got)
		}
		for _, owner := range []string{"node0:a", "node1:b"} {
			if k := key + ":" + owner + ":rwlock_timeout:1"; !s.exists(t, k) {
				t.Errorf("no lease key %s", k)
			}
		}
		mustNotAcquire(t, ls[1], "node1:w", refused)
		release(t, readA, nil)
		mustNotAcquire(t, ls[0], "node0:w", refused)
		release(t, readB, nil)
		if s.exists(t, key) {
			t.Errorf("%s left after the last reader: %v", key, s.hashOwners(t, key))
		}

		w := acquire(t, ctx, ls[0], "node0:w")
		if got := s.hashOwners(t, key); got["mode"] != "write" || got["node0:w:write"] != "1" {
			t.Errorf("%s = %v, want write mode held by node0:w", key, got)
		}
		mustNotAcquire(t, ls[1], "node1:w2", refused)
		short, cancel := context.WithTimeout(ctx, refused)
		if _, err := r1.AcquireRead(short, "node1:c"); err == nil {
			t.Error("a reader got in while a writer held the lock")
		}
		cancel()
		// A reader waiting on the other node is let in by the release.
		got := make(chan error, 1)
		go func() {
			l, err := r1.AcquireRead(ctx, "node1:d")
			if err == nil {
				err = l.Release(ctx)
			}
			got <- err
		}()
		time.Sleep(50 * time.Millisecond)
		release(t, w, nil)
		if err := <-got; err != nil {
			t.Errorf("reader after the writer: %v", err)
		}
		if s.exists(t, key) {
			t.Errorf("%s left after every release: %v", key, s.hashOwners(t, key))
		}
		left, err := s.admin.Keys(t.Context(), key+":*rwlock_timeout*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 {
			t.Errorf("lease keys left: %s", strings.Join(left, ", "))
		}
	})
}

// TestRWReaderRenewed: the readers' watchdog keeps a read lock for four
// leases while a writer tries; once the reader's client is gone (its
// watchdog with it), the lease runs out, lease key and all, and the writer
// gets in.
func TestRWReaderRenewed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "rw")
		key := lockKey(t)
		ttl := 500 * time.Millisecond
		ls := s.nodes(t, im, key, ttl, 2)
		rctx, crash := context.WithCancel(holdCtx(t))
		defer crash()
		if _, err := ls[0].(locks.ReadLocker).AcquireRead(rctx, "node0:r"); err != nil {
			t.Fatal(err)
		}
		mustNotAcquire(t, ls[1], "node1:w", 4*ttl)
		crash()
		s.waitGone(t, key)
		w := acquire(t, holdCtx(t), ls[1], "node1:w")
		release(t, w, nil)
	})
}
