package workload

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/history"
)

// Controls are the levers a fault injector pulls on a running sale. Each
// acts on one simulated node or client, as a fault in a real deployment
// hits one process.
type Controls struct{ r *run }

// Nodes is the number of nodes in the sale.
func (c *Controls) Nodes() int { return len(c.r.nodes) }

// Go runs f in a goroutine of the run's: a panic in it ends the run as an
// internal error (the sale cut short, the panic returned with what was
// recorded), never the process. A fault starts its goroutines with it.
func (c *Controls) Go(f func()) { c.r.goSafe(f) }

// Now is the sale's clock: nanoseconds since it started.
func (c *Controls) Now() int64 { return c.r.now() }

// PauseNode stops everything node i runs for d: its clients, its lock's
// timers and renewals, its business steps. Work resumes where it stopped.
func (c *Controls) PauseNode(i int, d time.Duration) { c.r.nodes[i].pause.begin(d) }

// LetThrough lets client k through node i's pause, while the rest of the
// node stays stopped until the pause ends.
func (c *Controls) LetThrough(i int, k int32) { c.r.nodes[i].pause.letThrough(k) }

// ResumeNode ends node i's pause now, however long it was meant to last.
func (c *Controls) ResumeNode(i int) { c.r.nodes[i].pause.end() }

// SkewClock sets node i's clock to run offset ahead of real time (behind
// when negative). Only that node's clock moves.
func (c *Controls) SkewClock(i int, offset time.Duration) {
	n := c.r.nodes[i]
	n.skew.Store(int64(offset))
	if n.remote != nil {
		n.remote.skew(int64(offset))
	}
}

// NodeClock returns node i's wall clock.
func (c *Controls) NodeClock(i int) time.Time { return c.r.nodes[i].now() }

// Kill crashes client k: it stops where it is and never releases a lock it
// holds; whatever it started in the background with its context stops too.
// It reports whether the client was running. With nodes in processes of
// their own, the client's whole node is killed (SIGKILL), every buyer it
// had in flight with it, and started again.
func (c *Controls) Kill(k int32) bool {
	if k < 0 || int(k) >= len(c.r.kill) {
		return false
	}
	if c.r.coord != nil {
		return c.r.coord.kill(k)
	}
	cancel := c.r.kill[k].Load()
	if cancel == nil {
		return false
	}
	c.r.crashAt[k].CompareAndSwap(0, c.r.now())
	(*cancel)(ErrCrashed)
	return true
}

// Commands is how many commands node i's clients have sent so far.
func (c *Controls) Commands(i int) int64 { return c.r.nodes[i].commands.Load() }

// NodeTraffic reads, at one instant, how many commands node i has let
// past its pause, whether the node is paused, and how many pauses it has
// begun: two readings within one pause show the same count.
func (c *Controls) NodeTraffic(i int) (commands int64, paused bool, pauses int64) {
	n := c.r.nodes[i]
	return n.pause.state(&n.commands)
}

// WaitNode returns when node i is not paused (at once when it is not),
// or when ctx ends.
func (c *Controls) WaitNode(ctx context.Context, i int) error {
	return c.r.nodes[i].pause.wait(ctx)
}

// DeleteLock removes the lock's key on the server (every item's, for a
// sale of several), as an eviction, a
// failover or a flush would: whoever holds the lock is not told. A lock on
// several servers loses its key on a majority of them (the first ones).
func (c *Controls) DeleteLock(ctx context.Context) error {
	if c.r.admin == nil {
		return fmt.Errorf("%w: no Redis holds the lock", servers.ErrUnsupported)
	}
	if c.Servers() > 1 {
		return c.DeleteLockOn(ctx, serverRange(c.Quorum())...)
	}
	// A sale of several items loses every item's lock at once.
	return c.r.admin.Del(ctx, c.r.keys.locks...).Err()
}

// LockHeld reports whether the lock's key is on the server (on the main
// server, for a lock on several): held by someone, whoever it is; for a
// sale of several items, whether any item's lock is.
func (c *Controls) LockHeld(ctx context.Context) (bool, error) {
	n, err := c.r.admin.Exists(ctx, c.r.keys.locks...).Result()
	return n > 0, err
}

// LockLeaseLeft returns the time left on the lock's lease on the server
// (PTTL of its key; of the main server's, for a lock on several). ok is
// false when the key is gone, has no expiry, or the sale has no single
// lock key in Redis (several items, or a lock that lives elsewhere).
func (c *Controls) LockLeaseLeft(ctx context.Context) (left time.Duration, ok bool, err error) {
	if c.r.admin == nil || len(c.r.keys.locks) != 1 {
		return 0, false, nil
	}
	d, err := c.r.admin.PTTL(ctx, c.r.keys.locks[0]).Result()
	if err != nil || d <= 0 {
		return 0, false, err
	}
	return d, true, nil
}

// PauseServer stops the server that holds the inventory from answering
// for d, when it can (see Pauser): the Redis, or the MySQL of a SQL sale.
func (c *Controls) PauseServer(ctx context.Context, d time.Duration) error {
	c.r.quiet(d + c.r.lostAfter())
	p, ok := c.r.store.(servers.Pauser)
	if !ok {
		return servers.ErrUnsupported
	}
	return p.Pause(ctx, d)
}

// RestartServer restarts the server without persistence, when the backend
// can (see Restarter).
func (c *Controls) RestartServer(ctx context.Context) error {
	c.r.quiet(c.r.lostAfter())
	rs, ok := c.r.store.(servers.Restarter)
	if !ok {
		return servers.ErrUnsupported
	}
	return rs.Restart(ctx)
}

// LoseQuorum takes the quorum of the sale's replicated server (the first
// of its Needs that can lose it, servers.Set.Quorum) away for d: a
// majority of its members stop, then resume. It fails with
// servers.ErrUnsupported when no server of the sale can.
func (c *Controls) LoseQuorum(ctx context.Context, d time.Duration) error {
	q := c.r.cfg.Servers.Quorum(c.r.cfg.Sale.Needs())
	if q == nil {
		return servers.ErrUnsupported
	}
	c.r.quiet(d + c.r.lostAfter())
	return q.LoseQuorum(ctx, d)
}

// PauseInstance stops instance i of a service under test for d, as a
// stop-the-world pause would, and returns when it runs again or ctx ends
// (it is resumed then too): SIGSTOP and SIGCONT of its process, or docker
// pause and unpause of its container. It fails with servers.ErrUnsupported
// when neither is known.
//
// frozen, if not nil, is called once the instance is stopped (a docker
// pause can take a while to take hold), and the function it returns just
// before it is let run again: a window recorded between the two lies
// within the freeze, so that nothing the instance answers can fall in it.
func (c *Controls) PauseInstance(ctx context.Context, i int, d time.Duration, frozen func() (thawing func())) error {
	if frozen == nil {
		frozen = func() func() { return func() {} }
	}
	return c.r.instances.pause(ctx, i, d, frozen)
}

// CrashInstance kills instance i of a service under test (SIGKILL: its
// connections close in the kernel, its locks stay until they expire),
// leaves it down for down, then starts it again with its start command
// (Servers.TargetStart) and returns once it accepts connections, or ctx
// ends. The new process is the instance from then on; lockbench does not
// stop it when the run ends, as it did not stop the first.
func (c *Controls) CrashInstance(ctx context.Context, i int, down time.Duration) error {
	return c.r.instances.crash(ctx, i, down, c.r.cfg.Servers.Endpoints[i].Host)
}

// Record adds an injection to the sale's history and counts it as active
// until End is set by Finish.
func (c *Controls) Record(f history.Fault) int {
	return c.r.faults.add(f)
}

// Finish marks injection i as over now.
func (c *Controls) Finish(i int) { c.r.faults.finish(i, c.r.now()) }

// faultLog is the list of injections of a sale.
type faultLog struct {
	mu     sync.Mutex
	faults []history.Fault
	// active counts the injections in force, injected all of them.
	active, injected atomic.Int64
}

func (l *faultLog) add(f history.Fault) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults = append(l.faults, f)
	l.injected.Add(1)
	if f.End == 0 {
		l.active.Add(1)
	}
	return len(l.faults) - 1
}

func (l *faultLog) finish(i int, at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.faults[i].End == 0 {
		l.faults[i].End = at
		l.active.Add(-1)
	}
}

func (l *faultLog) list() []history.Fault {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]history.Fault(nil), l.faults...)
}
