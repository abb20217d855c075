package workload

import (
	"context"
	"sync"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
)

// Recorder is how a sale records one attempt at one item: the sale says
// what happened (a lock acquired, a read sent, its answer, a write sent,
// applied, refused, of unknown outcome, never sent) and the recorder
// writes the instants and states the checker reads, so that every sale,
// lockbench's own or a team's, follows the same rules. The engine makes
// one per item of each attempt (Attempt.Cart); a sale never makes one.
//
// The rules: an instant that did not happen is zero; a read that failed
// leaves no read; a write that was not sent leaves no write; a write sent
// and not answered is indeterminate, with no return; an attempt that
// found the stock gone or the user served wrote nothing; an attempt that
// stopped on an error is a crash if a fault killed the buyer, pending if
// the run ended under it, else failed.
//
// An attempt is a sequence of these events, each step's call before its
// answer: [Acquiring, Acquired] then Reading, Read (or ReadFailed), then
// Writing and Applied, Refused, Unknown or NotSent (or one of SoldOut,
// Duplicate, CartRefused), then [Releasing, Released]. Each event ending
// the attempt says so.
//
// A Recorder is also the locks.Trace of its attempt's lease: a sale puts
// it in the context it acquires the lock with (locks.WithTrace, or
// Attempt.Trace for a cart's), and the lock tells it the try that won,
// the lease granted and each renewal, from any goroutine. Renewals are
// kept up to the release (or the crash): one answered later is not.
type Recorder interface {
	locks.Trace

	// Acquiring marks the lock acquisition sent.
	Acquiring()
	// AcquiringShared marks a shared (read) lock's acquisition sent, by a
	// reader: the checker lets readers overlap one another.
	AcquiringShared()
	// Acquired records the lock obtained, with its fencing token (zero
	// when the lock hands out none).
	Acquired(token uint64)
	// Token records the fencing token the attempt's lease carried, when
	// the sale learns it other than by acquiring (a service under test
	// reports it in its answer).
	Token(t uint64)
	// GaveUp ends the attempt: the lock could not be obtained.
	GaveUp()

	// Reading marks the stock read sent.
	Reading()
	// Read records the read's answer: the stock the sale saw.
	Read(stock int64)
	// ReadUntold records the answer of a request that read the stock
	// without saying what it read (a service under test that does not
	// report it): the history says its reads are unknown
	// (history.Header.Unread), and the audits alone judge the data.
	ReadUntold()
	// ReadFailed ends an attempt whose read failed: nothing was read,
	// and the attempt never touched the stock.
	ReadFailed()

	// Writing marks the write sent now.
	Writing()
	// WritingWithRead marks the write sent with the read: one command or
	// one transaction did both.
	WritingWithRead()
	// Applied records the write acknowledged: the unit is sold.
	Applied()
	// AppliedWithRead records a sale that one command read and wrote:
	// the write's interval is the read's.
	AppliedWithRead()
	// Refused records the store's refusal of the write (a stale fencing
	// token).
	Refused()
	// Unknown records a write sent and never answered: it may have been
	// applied at any time after it was sent.
	Unknown()
	// NotSent ends an attempt whose write was never sent (or belonged to
	// a transaction that never committed): the read stands, no write
	// happened.
	NotSent()
	// Conflict records an optimistic write that found the data changed
	// since its read and so changed nothing: the attempt goes on with a
	// new read.
	Conflict()

	// SoldOut ends the attempt: the stock read was gone, nothing was
	// written.
	SoldOut()
	// Duplicate ends the attempt: the user already had an order, nothing
	// was written.
	Duplicate()
	// CartRefused ends the attempt at an item that had stock while
	// another item of its cart had none, or was already the buyer's:
	// nothing was written.
	CartRefused()
	// Fail ends the attempt on an error before any write was sent: a
	// crash if a fault killed the buyer, pending if the run ended under
	// it, else failed.
	Fail()
	// Stopped records a buyer stopped at a probe point after its sale: a
	// crash or the run's end overrides the sale's outcome, nothing else
	// does.
	Stopped()
	// Crashed ends the attempt of a buyer a fault killed.
	Crashed()

	// Releasing marks the lock release sent.
	Releasing()
	// Released records the release's answer; lost says the lock was
	// found no longer held by its caller.
	Released(lost bool)

	// Viewed ends a reader's attempt: it was shown the stock it read.
	Viewed()
	// ViewFailed ends a reader's attempt whose read failed: nothing was
	// read, and a reader is never sent away (a crash or the run's end
	// aside).
	ViewFailed()
}

// recorder is the engine's Recorder: it owns one attempt's history.Op at
// one item, and is the only code that writes it while the sale runs.
type recorder struct {
	r   *run
	op  *history.Op
	ctx context.Context // the buyer's: its cause says crash or cut

	// The lock's trace may come from another goroutine (a renewal loop):
	// it is kept under mu and moved into op by the sale's own calls
	// (flush), so that op is written by the buyer's goroutine alone.
	mu      sync.Mutex
	grant   int64             // the last try sent before the lock was obtained
	renewed []history.Renewal // renewals not yet in op
	closed  bool              // released or crashed: the trace is over
}

func (rec *recorder) Trying() {
	now := rec.r.now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !rec.closed {
		rec.grant = now
	}
}

func (rec *recorder) Granted(lease, server time.Duration) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.closed || rec.op.Lease > 0 {
		return // a nested acquisition's grant: the lease is the first one's
	}
	rec.op.Lease, rec.op.ServerLease = max(0, int64(lease)), max(0, int64(server))
}

func (rec *recorder) Renewing() func(ok bool) {
	call := rec.r.now()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.closed {
		return func(bool) {}
	}
	rec.renewed = append(rec.renewed, history.Renewal{Call: call})
	i := len(rec.renewed) - 1
	flushed := len(rec.op.Renewals)
	return func(ok bool) {
		ret := rec.r.now()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		// Answered after it was flushed into op, it is lost: op belongs
		// to the buyer's goroutine then.
		if j := i - (len(rec.op.Renewals) - flushed); !rec.closed && j >= 0 && j < len(rec.renewed) {
			rec.renewed[j].Return, rec.renewed[j].OK = ret, ok
		}
	}
}

// flush moves the trace gathered so far into op; close ends it. Both
// run on the buyer's goroutine.
func (rec *recorder) flush(close bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.grant > 0 && rec.op.Acquired == 0 && rec.op.AcquireCall > 0 {
		rec.op.GrantCall = rec.grant
	}
	rec.op.Renewals = append(rec.op.Renewals, rec.renewed...)
	rec.renewed = rec.renewed[:0]
	rec.closed = rec.closed || close
}

func (rec *recorder) Acquiring() { rec.op.AcquireCall = rec.r.now() }

func (rec *recorder) AcquiringShared() {
	rec.op.AcquireCall = rec.r.now()
	rec.op.Shared = true
}

func (rec *recorder) Acquired(token uint64) {
	rec.flush(false)
	rec.op.Acquired = rec.r.now()
	rec.op.Token = token
}

func (rec *recorder) Token(t uint64) { rec.op.Token = t }

func (rec *recorder) GaveUp() { rec.op.Outcome = history.GaveUp }

func (rec *recorder) Reading() { rec.op.ReadCall = rec.r.now() }

func (rec *recorder) Read(stock int64) {
	rec.op.ReadReturn = rec.r.now()
	rec.op.Stock = stock
}

func (rec *recorder) ReadUntold() {
	rec.op.ReadReturn = rec.r.now()
	rec.r.unread.Store(true)
}

func (rec *recorder) ReadFailed() {
	rec.op.ReadCall, rec.op.ReadReturn, rec.op.Stock = 0, 0, history.NoStock
	rec.NotSent()
}

func (rec *recorder) Writing() { rec.op.WriteCall = rec.r.now() }

func (rec *recorder) WritingWithRead() { rec.op.WriteCall = rec.op.ReadCall }

func (rec *recorder) Applied() {
	rec.op.WriteReturn = rec.r.now()
	rec.op.Write, rec.op.Outcome = history.Applied, history.Sold
}

func (rec *recorder) AppliedWithRead() {
	rec.op.WriteCall, rec.op.WriteReturn = rec.op.ReadCall, rec.op.ReadReturn
	rec.op.Write, rec.op.Outcome = history.Applied, history.Sold
}

func (rec *recorder) Refused() {
	rec.op.WriteReturn = rec.r.now()
	rec.op.Write, rec.op.Outcome = history.Refused, history.Rejected
}

func (rec *recorder) Unknown() {
	rec.op.Write = history.Indeterminate
	rec.op.Outcome = rec.r.failed(rec.ctx, history.Unknown)
}

func (rec *recorder) NotSent() {
	rec.op.WriteCall, rec.op.WriteReturn, rec.op.Write = 0, 0, history.NoWrite
	rec.Fail()
}

func (rec *recorder) Conflict() { rec.op.WriteCall = 0 }

func (rec *recorder) SoldOut() {
	rec.op.WriteCall, rec.op.WriteReturn, rec.op.Write = 0, 0, history.NoWrite
	rec.op.Outcome = history.SoldOut
}

func (rec *recorder) Duplicate() {
	rec.op.WriteCall, rec.op.WriteReturn, rec.op.Write = 0, 0, history.NoWrite
	rec.op.Outcome = history.Duplicate
}

func (rec *recorder) CartRefused() {
	rec.op.WriteCall, rec.op.WriteReturn, rec.op.Write = 0, 0, history.NoWrite
	rec.op.Outcome = history.CartRefused
}

func (rec *recorder) Fail() { rec.op.Outcome = rec.r.failed(rec.ctx, history.Failed) }

func (rec *recorder) Stopped() {
	if rec.op.Outcome == history.Crashed {
		return
	}
	if o := rec.r.failed(rec.ctx, rec.op.Outcome); o == history.Crashed || o == history.Pending {
		rec.op.Outcome = o
	}
}

func (rec *recorder) Crashed() {
	rec.flush(true)
	rec.op.Outcome = history.Crashed
}

func (rec *recorder) Releasing() {
	rec.op.ReleaseCall = rec.r.now()
	rec.flush(true)
}

func (rec *recorder) Released(lost bool) {
	rec.flush(true)
	rec.op.Released = rec.r.now()
	rec.op.Lost = lost
}

func (rec *recorder) Viewed() {
	rec.op.Write, rec.op.Outcome = history.NoWrite, history.Viewed
}

func (rec *recorder) ViewFailed() {
	rec.op.ReadCall, rec.op.ReadReturn, rec.op.Stock = 0, 0, history.NoStock
	rec.op.Outcome = rec.r.failed(rec.ctx, history.Viewed)
}
