package workload

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// node is one simulated service instance: its own client and connection
// pool, its own lock handle (and so its own in-process lock, subscription
// and watchdog timers), its own clock, and a pause that a fault can
// begin to stop everything the node does.
type node struct {
	id      int
	uuid    string // the instance's id, as the sources' UUID prefix of owner values
	client  *redis.Client
	servers []*redis.Client // one per server of a multi-server lock, client first
	// seller is the node's side of the sale (Sale.StartNode).
	seller   Seller
	pause    nodePause
	skew     atomic.Int64 // the clock's offset, ns
	commands atomic.Int64
	queue    chan int32 // clients waiting for a worker
	// remote is the node's process, when it runs in one (Config.Launcher).
	remote *remoteNode
}

// now is the node's wall clock.
func (n *node) now() time.Time {
	return time.Now().Add(time.Duration(n.skew.Load()))
}

// nodePause stops the node's goroutines while a pause is on. Every Redis
// command the node sends, and every business step, passes it.
type nodePause struct {
	mu     sync.Mutex
	on     chan struct{} // closed when the pause ends; nil while none is on
	until  time.Time
	pauses int64 // pauses begun, so that a reader can tell one from the next
	// through is the one client let through while the pause is on (see
	// letThrough); -1 for none.
	through int32
	// stops counts the times a goroutine began to wait on a pause (again,
	// when letThrough woke it), so that a test can tell it waits.
	stops int64
	// remote, for a node in a process of its own, pulls the same levers
	// on the process: a pause freezes it, its end lets it run.
	remote lever
}

// lever is a node's process, which a pause stops and lets go.
type lever interface {
	stop()
	through(client int32)
	cont()
}

// begin starts a pause of d; a pause that overlaps another extends it.
func (p *nodePause) begin(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := time.Now().Add(d)
	if p.on != nil {
		if until.After(p.until) {
			p.until = until
		}
		return
	}
	p.on, p.until, p.through = make(chan struct{}), until, -1
	p.pauses++
	if p.remote != nil {
		p.remote.stop()
	}
	go p.expire(p.on)
}

// letThrough lets client go on for the rest of the pause, while
// everything else the node runs stays stopped.
func (p *nodePause) letThrough(client int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on == nil {
		return
	}
	// Wake the waiters: the client goes on, the others wait on anew.
	close(p.on)
	p.on, p.through = make(chan struct{}), client
	if p.remote != nil {
		p.remote.through(client)
	}
	go p.expire(p.on)
}

// blocked returns the channel to wait on, nil when ctx's client may go.
func (p *nodePause) blocked(ctx context.Context) chan struct{} {
	if p.on != nil && p.through >= 0 && clientOf(ctx) == p.through {
		return nil
	}
	return p.on
}

// end ends the pause on, if any, now.
func (p *nodePause) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on != nil {
		p.close()
	}
}

// close ends the pause on; p.mu is held.
func (p *nodePause) close() {
	close(p.on)
	p.on = nil
	if p.remote != nil {
		p.remote.cont()
	}
}

// expire ends the pause begun with on once it is due to end, unless it
// was ended before.
func (p *nodePause) expire(on chan struct{}) {
	for {
		p.mu.Lock()
		if p.on != on {
			p.mu.Unlock()
			return
		}
		left := time.Until(p.until)
		if left <= 0 {
			p.close()
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		time.Sleep(left)
	}
}

// pass returns when no pause is on, and counts n on sent while it holds
// the pause's lock, or returns ctx's cause once ctx has ended: a command
// counted was let through before a pause began or after it ended, never
// during one, so that a reader of the count under the same lock (state)
// sees no command pass during a pause, however the goroutines are
// scheduled.
func (p *nodePause) pass(ctx context.Context, sent *atomic.Int64, n int64) error {
	return p.hold(ctx, true, func() { sent.Add(n) })
}

// state reads sent, whether a pause is on, and how many pauses have
// begun, at one instant.
func (p *nodePause) state(sent *atomic.Int64) (n int64, paused bool, pauses int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return sent.Load(), p.on != nil, p.pauses
}

// wait returns when no pause is on (or ctx's client was let through) or
// ctx ends. A waiter woken while the pause goes on (letThrough wakes them
// all) waits anew.
func (p *nodePause) wait(ctx context.Context) error {
	return p.hold(ctx, false, nil)
}

// hold is pass and wait: it returns nil once ctx's client may go on,
// having called let (if any) under the pause's lock, or ctx's cause when
// ctx ends while it waits; ended makes a ctx that has already ended fail
// at once, pause or not.
func (p *nodePause) hold(ctx context.Context, ended bool, let func()) error {
	for {
		p.mu.Lock()
		if ended && ctx.Err() != nil {
			p.mu.Unlock()
			return context.Cause(ctx)
		}
		c := p.blocked(ctx)
		if c == nil {
			if let != nil {
				let()
			}
			p.mu.Unlock()
			return nil
		}
		p.stops++
		p.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// stopped is how many times a goroutine began to wait on a pause.
func (p *nodePause) stopped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stops
}

// notSentError wraps the reason a command was never sent: the client was
// dead or the run over before it left. A write that was not sent is known
// not to have happened.
type notSentError struct{ cause error }

func (e *notSentError) Error() string { return "not sent: " + e.cause.Error() }
func (e *notSentError) Unwrap() error { return e.cause }

// Is makes a command that was not sent match ErrNotSent.
func (e *notSentError) Is(target error) bool { return target == ErrNotSent }

// hook puts the node's pause and command counter in front of every command.
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

// admit lets n commands past the node's pause and counts them, or says
// why they were never sent.
func (h hook) admit(ctx context.Context, n int64) error {
	if err := h.n.pause.pass(ctx, &h.n.commands, n); err != nil {
		return &notSentError{err}
	}
	return nil
}
