package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/servers"
)

// levers are the Sentinel topology's, when lockbench started it.
func (c *Controls) levers() (servers.FailoverLevers, error) {
	if s, ok := c.r.store.(*servers.Sentinel); ok && s.Levers() != nil {
		return s.Levers(), nil
	}
	return nil, fmt.Errorf("%w: %s is not a Sentinel topology lockbench started", servers.ErrUnsupported, c.r.store.Name())
}

// HoldReplication stops (true) or resumes (false) the replication stream
// from the primary to its replica: while held, what the primary
// acknowledges is on the primary alone.
func (c *Controls) HoldReplication(hold bool) error {
	l, err := c.levers()
	if err != nil {
		return err
	}
	l.HoldReplication(hold)
	return nil
}

// ReplicaSynced reports whether the replica has every write of the
// primary.
func (c *Controls) ReplicaSynced(ctx context.Context) (bool, error) {
	l, err := c.levers()
	if err != nil {
		return false, err
	}
	return l.Synced(ctx)
}

// LockOnReplica reports whether the lock's key is on the replica.
func (c *Controls) LockOnReplica(ctx context.Context) (bool, error) {
	l, err := c.levers()
	if err != nil {
		return false, err
	}
	return l.ReplicaHas(ctx, c.r.keys.lock)
}

// FailOver stops the primary until the Sentinels have promoted the
// replica (within bound), then lets the old primary come back as the new
// one's replica, its data replaced. The sale's watch does not count the
// server silent meanwhile.
func (c *Controls) FailOver(ctx context.Context, bound time.Duration) (from, to string, err error) {
	l, err := c.levers()
	if err != nil {
		return "", "", err
	}
	c.r.quiet(bound + c.r.lostAfter())
	return l.Failover(ctx, bound)
}
