package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
)

// Failover is the way a Redis lock is most often lost in production: the
// primary acknowledges a lock and dies before its replica has it; Sentinel
// promotes the replica, where the lock never was, and a second client
// takes it while the first still holds it.
var Failover Fault = &fault{
	name:    "failover",
	summary: "the primary grants a lock its replica never gets (replication held back at lockbench's relay), then stops (SIGSTOP) until Sentinel promotes the replica; the holder is kept inside until a second client has taken the lock on the new primary and read the stock (--backend=sentinel only)",
	params: []Param{
		{Name: "for", Doc: "longest wait for a holder once replication is held, and for a second holder after the failover", Default: "1s", kind: durationKind, def: fixed("1s")},
		pOnce, pAfter,
		{Name: "every", Doc: "least time between two failovers", Default: "5s", kind: durationKind, def: fixed("5s")},
	},
	needs: func(t workload.Reach) error {
		if !t.Failover {
			return fmt.Errorf("%w: failover needs the Sentinel topology lockbench starts (--backend=sentinel: a primary, a replica behind lockbench's relay, three Sentinels); %s is not", ErrUnavailable, t)
		}
		return nil
	},
	inProcess: true,
	build:     failover,
}

// failoverBound bounds a failover: the Sentinels' promotion (a second or
// two with down-after-milliseconds at 400 ms) and the old primary's
// resync as a replica.
const failoverBound = 15 * time.Second

// failoverTries bounds the tries at a quiet moment per injection.
const failoverTries = 20

func failover(v values, seed uint64) (plan, error) {
	at := schedule(seed, v.count("count"), v.duration("after"), v.duration("every"))
	return &timedPlan{v: v, at: at, fire: fireFailover}, nil
}

// fireFailover is one failover. A quiet moment first: a client has just
// released the lock, every node is stopped at its next command, the lock
// is free and the replica has every write, so that the primary will have
// nothing the replica lacks but the next lock. Replication is held
// there, the nodes run again, and the first client to get the lock is
// kept at its acquired point (its lock checked to be on the primary
// alone; a lock that made it to the replica is a missed window, tried
// again). The primary stops until the Sentinels promote the replica, and
// comes back as the new primary's replica; the nodes are paused
// meanwhile, as they would wait for a failover quicker than their
// command timeout. The holder stays kept until a second client has taken
// the lock on the new primary and read the stock; that one is kept from
// writing until the first has read, half a lease at most, so that both
// write from the same stock. A lock that waits for its replica
// (lua-wait) is never granted while replication is held: the failover
// comes after for, with nobody to keep.
func fireFailover(ctx context.Context, in *Injector, c *workload.Controls, v values) {
	wait := v.duration("for")
	for range failoverTries {
		if ctx.Err() != nil {
			return
		}
		holder, start, letGo, ok := holdQuiet(ctx, in, c, wait)
		if !ok {
			continue
		}
		i := c.Record(history.Fault{Name: "failover", Node: -1, Client: holder, Start: start, Params: v.params()})
		end := func() { c.Finish(i) }
		if ctx.Err() != nil {
			c.HoldReplication(false)
			letGo()
			end()
			return
		}
		// The nodes are paused while the primary is stopped:
		// their clients meet the new primary, not a wall of timeouts
		// that would leave no buyer to take the lock after.
		for i := range c.Nodes() {
			c.PauseNode(i, failoverBound)
		}
		_, _, err := c.FailOver(context.WithoutCancel(ctx), failoverBound)
		for i := range c.Nodes() {
			c.ResumeNode(i)
		}
		if err != nil || holder < 0 {
			c.HoldReplication(false)
			letGo()
			end()
			return
		}
		second := in.catches.expect(locks.Business, []int32{holder}, -1, true)
		read := in.catches.expect(locks.Business, nil, holder, false)
		bg := context.WithoutCancel(ctx)
		if _, release, err := in.catches.await(ctx, second, wait); err == nil {
			letGo()
			in.catches.await(bg, read, v.env.Lease/2)
			release()
		} else {
			letGo()
			in.catches.await(bg, read, 0)
		}
		end()
		return
	}
}

// holdQuiet finds a quiet moment, holds replication there and catches
// the next holder at its acquired point, kept until letGo; start is when
// replication was held. holder is -1 when nobody took the lock within
// wait (replication stays held: the failover follows); ok is false when
// the moment was missed and replication runs again.
func holdQuiet(ctx context.Context, in *Injector, c *workload.Controls, wait time.Duration) (holder int32, start int64, letGo func(), ok bool) {
	_, free, err := in.catches.wait(ctx, locks.Released, nil, true, wait)
	if err != nil {
		return -1, 0, nil, false
	}
	for i := range c.Nodes() {
		c.PauseNode(i, wait)
	}
	resume := func() {
		for i := range c.Nodes() {
			c.ResumeNode(i)
		}
		free()
	}
	// Commands let through before the pauses began land first.
	sleep(ctx, 5*time.Millisecond)
	quiet := false
	deadline := time.Now().Add(wait / 2)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		held, err := c.LockHeld(ctx)
		if err != nil || held {
			break // someone got in before the nodes were paused
		}
		if synced, err := c.ReplicaSynced(ctx); err == nil && synced {
			quiet = true
			break
		}
		sleep(ctx, 2*time.Millisecond)
	}
	if !quiet {
		resume()
		return -1, 0, nil, false
	}
	start = c.Now()
	if c.HoldReplication(true) != nil {
		resume()
		return -1, 0, nil, false
	}
	got := in.catches.expect(locks.Acquired, nil, -1, true)
	resume()
	h, letGo, err := in.catches.await(ctx, got, wait)
	if err != nil {
		return -1, start, func() {}, true
	}
	if on, err := c.LockOnReplica(ctx); err != nil || on {
		c.HoldReplication(false)
		letGo()
		return -1, 0, nil, false
	}
	return h, start, letGo, true
}
