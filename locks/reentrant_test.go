package locks_test

import (
	"slices"
	"testing"
	"time"
)

// TestReentrancy has an owner acquire the lock it holds. Reentrant
// implementations count levels and keep the lock until the outer release;
// the others block their own holder.
func TestReentrancy(t *testing.T) {
	var reentrant []string
	for _, im := range lockImpls() {
		if im.Reentrant {
			reentrant = append(reentrant, im.Name)
		}
	}
	if want := []string{"local", "reentrant", "watchdog", "spin", "fair", "multi", "rw", "renew-naive"}; !slices.Equal(reentrant, want) {
		t.Errorf("reentrant implementations = %q, want %q", reentrant, want)
	}

	forEachBackend(t, func(t *testing.T, s *server) {
		for _, im := range lockImpls() {
			t.Run(im.Name, func(t *testing.T) {
				t.Parallel()
				ttl := 5 * time.Second
				if im.Name == "renew-naive" {
					ttl = 5000 * time.Second // seconds used as ms
				}
				ls := s.nodes(t, im, lockKey(t), ttl, 2)
				if im.Name == "local" {
					ls[1] = ls[0]
				}
				ctx := holdCtx(t)
				outer := acquire(t, ctx, ls[0], "node0:a")
				if !im.Reentrant {
					// The holder waits for itself.
					mustNotAcquire(t, ls[0], "node0:a", refused)
					release(t, outer, nil)
					return
				}
				inner := acquire(t, ctx, ls[0], "node0:a")
				release(t, inner, nil)
				mustNotAcquire(t, ls[1], "node1:b", refused)
				release(t, outer, nil)
				b := acquire(t, ctx, ls[1], "node1:b")
				release(t, b, nil)
			})
		}
	})
}
