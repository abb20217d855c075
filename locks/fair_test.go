package locks_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/locks"
)

// TestFairOrder: waiters of the fair lock get it in the order of their
// first tries, across nodes; a newcomer that tries the moment the lock is
// freed, before the head of the queue is told, does not overtake them.
func TestFairOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "fair")
		key := lockKey(t)
		ls := s.nodes(t, im, key, 2*time.Second, 3)
		ctx := holdCtx(t)
		holder := acquire(t, ctx, ls[0], "node0:holder")
		const waiters = 6
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := range waiters {
			owner := fmt.Sprintf("node%d:w%d", i%3, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := ls[i%3].Acquire(ctx, owner)
				if err != nil {
					t.Errorf("%s: %v", owner, err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				l.Release(context.WithoutCancel(ctx))
			}()
			// The next waiter starts once this one is queued.
			for n := int64(0); n < int64(i+1); {
				var err error
				if n, err = s.admin.LLen(ctx, key+":queue").Result(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond)
			}
		}
		release(t, holder, nil)
		newcomer, err := ls[1].Acquire(ctx, "node1:newcomer")
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		order = append(order, waiters)
		mu.Unlock()
		newcomer.Release(ctx)
		wg.Wait()
		if want := []int{0, 1, 2, 3, 4, 5, 6}; !slices.Equal(order, want) {
			t.Errorf("granted in order %v, want the queue's %v", order, want)
		}
	})
}

// TestFairLeave: a waiter that gives up leaves the queue (Redisson's
// acquire-failed step), so that the waiter behind it is first and gets the
// lock when the holder releases; a waiter whose client died (its context
// ended with locks.ErrCrashed) keeps its place, as a dead process would.
func TestFairLeave(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		im := impl(t, "fair")
		key := lockKey(t)
		ls := s.nodes(t, im, key, 2*time.Second, 2)
		ctx := holdCtx(t)
		holder := acquire(t, ctx, ls[0], "node0:holder")
		queue := func() []string {
			q, err := s.admin.LRange(ctx, key+":queue", 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
		// wait queues owner on l until stop ends its context with cause.
		wait := func(l locks.Locker, owner string) (stop func(cause error), done chan error) {
			c, cancel := context.WithCancelCause(ctx)
			done = make(chan error, 1)
			go func() {
				_, err := l.Acquire(c, owner)
				done <- err
			}()
			for !slices.Contains(queue(), owner) {
				time.Sleep(time.Millisecond)
			}
			return cancel, done
		}
		stopGaveUp, gaveUp := wait(ls[1], "node1:gives-up")
		stopDead, dead := wait(ls[1], "node1:dies")
		stopGaveUp(context.Canceled)
		<-gaveUp
		stopDead(locks.ErrCrashed)
		<-dead
		if got, want := queue(), []string{"node1:dies"}; !slices.Equal(got, want) {
			t.Errorf("queue %q after one waiter gave up and one died, want %q", got, want)
		}
		// With the dead waiter first in line, a newcomer cannot get the
		// lock once it is free: the queue waits for the dead place to
		// lapse (five minutes). That is the fair lock's cost, measured
		// here by its state, not by waiting.
		release(t, holder, nil)
		mustNotAcquire(t, ls[0], "node0:newcomer", 100*time.Millisecond)
	})
}
