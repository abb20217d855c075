package workload

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/locks"
	"github.com/redis/go-redis/v9"
)

// node is one simulated service instance: its own client and connection
// pool, its own lock handle (and so its own in-process lock, subscription
// and watchdog timers), its own clock, and a gate that a fault can close
// to stop everything the node does.
type node struct {
	id       int
	uuid     string // the instance's id, as the seeds' UUID prefix of owner values
	client   *redis.Client
	servers  []*redis.Client // one per server of a multi-server lock, client first
	sql      *sqlNode        // the node's MySQL pool, for the SQL sales
	locker   locks.Locker
	target   *url.URL     // the instance of a service under test the node drives
	http     *http.Client // the node's client of it
	gate     gate
	skew     atomic.Int64 // the clock's offset, ns
	commands atomic.Int64
	queue    chan int32 // clients waiting for a worker
}

// now is the node's wall clock.
func (n *node) now() time.Time {
	return time.Now().Add(time.Duration(n.skew.Load()))
}

// gate blocks the node's goroutines while a pause is on. Every Redis
// command the node sends, and every business step, passes it.
type gate struct {
	mu     sync.Mutex
	closed chan struct{} // nil while open
	until  time.Time
	pauses int64 // pauses begun, so that a reader can tell one from the next
	// through is the one client let through while the gate is closed (see
	// letThrough); -1 for none.
	through int32
}

// pause closes the gate for d; a pause that overlaps another extends it.
func (g *gate) pause(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	until := time.Now().Add(d)
	if g.closed != nil {
		if until.After(g.until) {
			g.until = until
		}
		return
	}
	g.closed, g.until, g.through = make(chan struct{}), until, -1
	g.pauses++
	go g.reopen(g.closed)
}

// letThrough lets client through the closed gate for the rest of the
// pause, while everything else the node runs stays stopped.
func (g *gate) letThrough(client int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		return
	}
	// Wake the waiters: the client goes on, the others wait on anew.
	close(g.closed)
	g.closed, g.through = make(chan struct{}), client
	go g.reopen(g.closed)
}

// shut returns the channel to wait on, nil when ctx's client may go.
func (g *gate) shut(ctx context.Context) chan struct{} {
	if g.closed != nil && g.through >= 0 && clientOf(ctx) == g.through {
		return nil
	}
	return g.closed
}

// resume opens the gate now, ending the pause on, if any.
func (g *gate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// reopen opens the gate once the pause that closed it with closed is due
// to end, unless it was resumed before.
func (g *gate) reopen(closed chan struct{}) {
	for {
		g.mu.Lock()
		if g.closed != closed {
			g.mu.Unlock()
			return
		}
		left := time.Until(g.until)
		if left <= 0 {
			close(g.closed)
			g.closed = nil
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		time.Sleep(left)
	}
}

// pass returns when the gate is open, and counts n on sent while it holds
// the gate open, or returns ctx's cause once ctx has ended: a command counted was let through
// before a pause began or after it ended, never during one, so that a
// reader of the count under the gate's lock (state) sees no command pass
// a closed gate, however the goroutines are scheduled.
func (g *gate) pass(ctx context.Context, sent *atomic.Int64, n int64) error {
	for {
		g.mu.Lock()
		if err := ctx.Err(); err != nil {
			g.mu.Unlock()
			return context.Cause(ctx)
		}
		c := g.shut(ctx)
		if c == nil {
			sent.Add(n)
			g.mu.Unlock()
			return nil
		}
		g.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// state reads sent, whether the gate is closed, and how many pauses have
// begun, at one instant.
func (g *gate) state(sent *atomic.Int64) (n int64, closed bool, pauses int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return sent.Load(), g.closed != nil, g.pauses
}

// wait returns when the gate is open or ctx ends.
func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	c := g.shut(ctx)
	g.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// notSentError wraps the reason a command was never sent: the client was
// dead or the run over before it left. A write that was not sent is known
// not to have happened.
type notSentError struct{ cause error }

func (e *notSentError) Error() string { return "not sent: " + e.cause.Error() }
func (e *notSentError) Unwrap() error { return e.cause }

func notSent(err error) bool {
	var ns *notSentError
	return errors.As(err, &ns)
}

// hook puts the node's gate and command counter in front of every command.
type hook struct{ n *node }

func (h hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.admit(ctx, 1); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.admit(ctx, int64(len(cmds))); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// admit lets n commands through the node's gate and counts them, or
// says why they were never sent.
func (h hook) admit(ctx context.Context, n int64) error {
	if err := h.n.gate.pass(ctx, &h.n.commands, n); err != nil {
		return &notSentError{err}
	}
	return nil
}
