package locks_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
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
