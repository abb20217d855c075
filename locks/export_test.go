package locks

import (
	"context"
	"time"
)

// ZKWakeups is how many watch events woke the waiters of a ZooKeeper
// Locker, for the no-herd test.
func ZKWakeups(l Locker) int64 { return l.(*zkLock).wakeups.Load() }

// TryAll is one round of the multi lock: all of keys within wait, or none.
func TryAll(ctx context.Context, l Locker, owner string, keys []string, wait time.Duration) (Lease, error) {
	return l.(*multiLocker).TryAll(ctx, owner, keys, wait)
}
