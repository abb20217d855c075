package locks

// ZKWakeups is how many watch events woke the waiters of a ZooKeeper
// Locker, for the no-herd test.
func ZKWakeups(l Locker) int64 { return l.(*zkLock).wakeups.Load() }
