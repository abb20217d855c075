package workload

import (
	"context"

	"github.com/lockbench/lockbench/history"
)

// recorder owns one purchase attempt's history.Op: a sale tells it what
// happened (a read sent, its answer, a write sent, applied, refused, of
// unknown outcome, never sent) and the recorder writes the instants and
// states the checker reads, so that every sale follows the same rules.
//
// The rules: an instant that did not happen is zero; a read that failed
// leaves no read; a write that was not sent leaves no write; a write sent
// and not answered is indeterminate, with no return; an attempt that
// found the stock gone or the user served wrote nothing.
type recorder struct {
	r   *run
	op  *history.Op
	ctx context.Context // the buyer's: its cause says crash or cut
	// item is the op's item, k its keys.
	item int
	k    *keys
	// cart is the recorders of every item of the attempt, this one
	// among them.
	cart cart
}

// acquiring marks the lock acquisition sent.
func (rec *recorder) acquiring() { rec.op.AcquireCall = rec.r.now() }

// acquired records the lock obtained, with its fencing token (zero when
// the lock hands out none).
func (rec *recorder) acquired(token uint64) {
	rec.op.Acquired = rec.r.now()
	rec.op.Token = token
}

// token records the fencing token the attempt's lease carried, when the
// sale learns it other than by acquiring (a service under test reports
// it in its answer).
func (rec *recorder) token(t uint64) { rec.op.Token = t }

// gaveUp ends the attempt: the lock could not be obtained.
func (rec *recorder) gaveUp() { rec.op.Outcome = history.GaveUp }

// reading marks the stock read sent.
func (rec *recorder) reading() { rec.op.ReadCall = rec.r.now() }

// read records the read's answer: the stock the sale saw.
func (rec *recorder) read(stock int64) {
	rec.op.ReadReturn = rec.r.now()
	rec.op.Stock = stock
}

// answered records the answer of a request that read the stock without
// saying what it read (a service under test that does not report it).
func (rec *recorder) answered() { rec.op.ReadReturn = rec.r.now() }

// readFailed ends an attempt whose read failed: nothing was read, and the
// attempt never touched the stock.
func (rec *recorder) readFailed() {
	rec.op.ReadCall, rec.op.ReadReturn, rec.op.Stock = 0, 0, history.NoStock
	rec.notSent()
}

// writing marks the write sent now.
func (rec *recorder) writing() { rec.op.WriteCall = rec.r.now() }

// writingWithRead marks the write sent with the read: one command or one
// transaction did both.
func (rec *recorder) writingWithRead() { rec.op.WriteCall = rec.op.ReadCall }

// applied records the write acknowledged: the unit is sold.
func (rec *recorder) applied() {
	rec.op.WriteReturn = rec.r.now()
	rec.op.Write, rec.op.Outcome = history.Applied, history.Sold
}

// appliedWithRead records a sale that one command read and wrote: the
// write's interval is the read's.
func (rec *recorder) appliedWithRead() {
	rec.op.WriteCall, rec.op.WriteReturn = rec.op.ReadCall, rec.op.ReadReturn
	rec.op.Write, rec.op.Outcome = history.Applied, history.Sold
}

// refused records the store's refusal of the write (a stale fencing
// token).
func (rec *recorder) refused() {
	rec.op.WriteReturn = rec.r.now()
	rec.op.Write, rec.op.Outcome = history.Refused, history.Rejected
}

// unknown records a write sent and never answered: it may have been
// applied at any time after it was sent.
func (rec *recorder) unknown() {
	rec.op.Write = history.Indeterminate
	rec.op.Outcome = rec.r.failed(rec.ctx, history.Unknown)
}

// notSent ends an attempt whose write was never sent (or belonged to a
// transaction that never committed): the read stands, no write happened.
func (rec *recorder) notSent() {
	rec.op.WriteCall, rec.op.WriteReturn, rec.op.Write = 0, 0, history.NoWrite
	rec.fail()
}

// conflict records an optimistic write that found the data changed since
// its read and so changed nothing: the attempt goes on with a new read.
func (rec *recorder) conflict() { rec.op.WriteCall = 0 }

// soldOut ends the attempt: the stock read was gone, nothing was written.
func (rec *recorder) soldOut() {
	rec.op.WriteCall, rec.op.WriteReturn, rec.op.Write = 0, 0, history.NoWrite
	rec.op.Outcome = history.SoldOut
}

// duplicate ends the attempt: the user already had an order, nothing was
// written.
func (rec *recorder) duplicate() {
	rec.op.WriteCall, rec.op.WriteReturn, rec.op.Write = 0, 0, history.NoWrite
	rec.op.Outcome = history.Duplicate
}

// fail ends the attempt on an error before any write was sent: a crash if
// a fault killed the buyer, pending if the run ended under it, else
// failed.
func (rec *recorder) fail() { rec.op.Outcome = rec.r.failed(rec.ctx, history.Failed) }

// stopped records a buyer stopped at a probe point after its sale: a
// crash or the run's end overrides the sale's outcome, nothing else does.
func (rec *recorder) stopped() {
	if rec.op.Outcome == history.Crashed {
		return
	}
	if o := rec.r.failed(rec.ctx, rec.op.Outcome); o == history.Crashed || o == history.Pending {
		rec.op.Outcome = o
	}
}

// crashed ends the attempt of a buyer a fault killed.
func (rec *recorder) crashed() { rec.op.Outcome = history.Crashed }

// releasing marks the lock release sent.
func (rec *recorder) releasing() { rec.op.ReleaseCall = rec.r.now() }

// released records the release's answer; lost says the lock was found no
// longer held by its caller.
func (rec *recorder) released(lost bool) {
	rec.op.Released = rec.r.now()
	rec.op.Lost = lost
}

// viewed ends a reader's attempt: it was shown the stock it read.
func (rec *recorder) viewed() {
	rec.op.Write, rec.op.Outcome = history.NoWrite, history.Viewed
}

// viewFailed ends a reader's attempt whose read failed: nothing was read,
// and a reader is never sent away (a crash or the run's end aside).
func (rec *recorder) viewFailed() {
	rec.op.ReadCall, rec.op.ReadReturn, rec.op.Stock = 0, 0, history.NoStock
	rec.op.Outcome = rec.r.failed(rec.ctx, history.Viewed)
}

// cartRefused ends the attempt at an item that had stock while another
// item of its cart had none, or was already the buyer's: nothing was
// written.
func (rec *recorder) cartRefused() {
	rec.op.WriteCall, rec.op.WriteReturn, rec.op.Write = 0, 0, history.NoWrite
	rec.op.Outcome = history.CartRefused
}

// cart is the recorders of one attempt's items, in item order.
type cart []*recorder

// each tells every item's recorder the same event.
func (c cart) each(f func(*recorder)) {
	for _, rec := range c {
		f(rec)
	}
}
