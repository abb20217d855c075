package locks

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/history"
)

// Promises are what a lock promises beyond exclusion, which the checker
// holds it to. Every lock promises exclusion within its lease (no second
// holder while a holder's lease is live on the server), and a fenced lock
// (Impl.Fenced) unique, increasing fencing tokens: those are checked
// whatever the lock declares here.
type Promises struct {
	// Renewal: the lock renews a held lease while its holder runs (a
	// watchdog, a refresh loop), so that the lease runs out only when the
	// holder is paused, stalled or cut off. A lock that says so must
	// report its renewals (Trace.Renewing): the checker takes a lease it
	// was not told of as never renewed, and a lease that ran out while
	// its holder ran as a broken promise.
	Renewal bool
	// FIFO: the lock is granted in the order its waiters asked for it.
	// Overtakes beyond what the clock error and the harness's measured
	// stalls explain fail the run.
	FIFO bool
	// Validity: the lock hands out a lease only while it is still valid,
	// measuring its acquisition's time against the lease (Redlock's
	// validity), so that a pause inside Acquire cannot return a lease
	// that already ran out. A lock that says so must mark each try
	// (Trace.Trying): the checker takes a holder that entered after its
	// try's lease had run out, while another's lease was live, as a
	// broken lock.
	Validity bool
}

// History is p as a run records it for the checker, for a lock fenced or
// not.
func (p Promises) History(fenced bool) *history.Promises {
	return &history.Promises{Exclusion: true, Renewal: p.Renewal, Tokens: fenced, FIFO: p.FIFO, Validity: p.Validity}
}

// Trace is told what a lock does with one acquisition's lease, as it
// happens, so that the run records it: the try that won the lock, the
// lease granted, each renewal. The run puts one in each acquisition's
// context (WithTrace); a lock reaches it with TraceOf on the context it
// was given, in Acquire and in a renewal loop started from it. Its
// methods may be called from any goroutine. A lock that says nothing
// loses nothing but precision: the acquisition's call bounds its lease's
// start, and the declared lease stands for the granted one.
type Trace interface {
	// Trying marks a try of the acquisition sent now: the last before
	// the lock is obtained is the one whose lease the holder got.
	Trying()
	// Granted records the lease the acquisition was granted: as the lock
	// asked for it, and as the server holds it (zero when not read).
	Granted(lease, server time.Duration)
	// Renewing marks a renewal of the held lease sent now; the function
	// it returns records the answer, ok when the server extended it.
	Renewing() func(ok bool)
}

type traceKey struct{}

// WithTrace returns ctx carrying t, for the lock acquired with it.
func WithTrace(ctx context.Context, t Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// TraceOf returns the Trace ctx carries, or one that records nothing.
func TraceOf(ctx context.Context) Trace {
	if t, ok := ctx.Value(traceKey{}).(Trace); ok {
		return t
	}
	return noTrace{}
}

// noTrace is the Trace of a context without one.
type noTrace struct{}

func (noTrace) Trying()                    {}
func (noTrace) Granted(_, _ time.Duration) {}
func (noTrace) Renewing() func(ok bool)    { return func(bool) {} }
