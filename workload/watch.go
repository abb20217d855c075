package workload

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/servers"
)

// errServerLost is the cause of a sale cut short because its inventory's
// server stopped answering for lostAfter.
var errServerLost = fmt.Errorf("%w: the server stopped answering", servers.ErrUnreachable)

// watchEvery is how often the watch asks the server.
const watchEvery = 250 * time.Millisecond

// LostAfter is how long the inventory's server may go without answering
// before the sale is cut short: two command timeouts, and 5 s at least,
// so that a busy machine or a slow command is not taken for a dead
// server. A server a fault pauses or restarts is given the fault's length
// on top. It also bounds an inventory's own requests (a service's reset
// and state).
func (w Workload) LostAfter() time.Duration {
	return max(5*time.Second, 2*w.CommandTimeout)
}

// lostAfter is the run's Workload.LostAfter.
func (r *run) lostAfter() time.Duration { return r.cfg.LostAfter() }

// quiet marks the server as silenced on purpose, by a fault, for d from
// now: the watch does not count that time.
func (r *run) quiet(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		cur := r.quietUntil.Load()
		if cur >= until || r.quietUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// watch asks the inventory's server every watchEvery whether it answers,
// and calls lose once it has not for lostAfter (less the time a fault
// silenced it), until ctx ends. A server that runs in this process is
// never lost: its round trips go to the run's health.
func (r *run) watch(ctx context.Context, lose context.CancelCauseFunc) {
	_, inProcess := r.store.(servers.InProcess)
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	var lastOK atomic.Int64
	lastOK.Store(time.Now().UnixNano())
	var pinging atomic.Bool
	var pings sync.WaitGroup
	defer pings.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok := max(lastOK.Load(), r.quietUntil.Load())
		if !inProcess && time.Since(time.Unix(0, ok)) > r.lostAfter() {
			lose(errServerLost)
			return
		}
		// One ping at a time: a hung server holds it until its timeout.
		if pinging.CompareAndSwap(false, true) {
			pings.Add(1)
			r.goGroup(&pings, func() {
				defer pinging.Store(false)
				pctx, cancel := context.WithTimeout(ctx, r.lostAfter())
				defer cancel()
				t0 := time.Now()
				err := r.inv.Ping(pctx)
				if err == nil {
					lastOK.Store(time.Now().UnixNano())
				}
				// A ping unanswered for lostAfter counts as that long; one
				// cut by the sale's end, or one a fault silenced, not at all.
				if inProcess && ctx.Err() == nil && r.quietUntil.Load() < t0.UnixNano() {
					r.health.Ping(time.Since(t0))
				}
			})
		}
	}
}

// watchClock starts measuring the steps of the run's Redis's clock when
// it moves in steps (the embedded server's, servers.SteppedClock) and
// the sale's leases live there; the function it returns stops and
// returns the longest. Zero for any other server, and for a lock on
// another kind of server (etcd, ZooKeeper, SQL), whose Redis holds only
// the inventory.
func (r *run) watchClock() func() time.Duration {
	elsewhere := len(r.cfg.Sale.Needs().Without(servers.KindRedis, servers.KindRedisServers, servers.KindRedisReplica, servers.KindTarget)) > 0
	if c, ok := r.cfg.Servers.Redis.(servers.SteppedClock); ok && !elsewhere {
		return c.WatchClock()
	}
	return func() time.Duration { return 0 }
}
