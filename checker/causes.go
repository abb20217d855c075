package checker

import (
	"slices"
	"time"

	"github.com/lockbench/lockbench/history"
)

// Cause is why two critical sections overlapped, as the history shows it.
type Cause string

// The causes of an overlap. Only the first two break a lock's promise
// whatever the store's fencing; the others are a lease's known limit (the
// data's safety then rests on fencing, as an unfenced lock's overlap
// fails and a fenced one's is a note) or a fault that removed the lock.
const (
	// CauseLiveLease: the second holder got the lock while the first's
	// lease was provably live on the server (its lease began, or was
	// last renewed, less than a lease before the second holder had it,
	// widened by the clock error and the harness's measured lease slack:
	// its stalls, and the embedded server's clock steps) and
	// no fault removed it. A broken lock.
	CauseLiveLease Cause = "live-lease"
	// CauseRanOut: the first holder's lease ran out while it ran: no
	// fault struck it meanwhile (slow-holder aside, which leaves its node
	// running), the harness never stood still for a third of the lease,
	// and no renewal was on its way when the lease ran out. A broken
	// promise when the lock promises renewal; the design's limit (a slow
	// holder) when it does not.
	CauseRanOut Cause = "ran-out-running"
	// CausePaused: the first holder's lease ran out while a fault paused
	// or slowed it, or while the harness stood still: the design's known
	// limit.
	CausePaused Cause = "ran-out-paused"
	// CauseFault: a fault that removes a lock (expire, delete-lock,
	// restart, failover) struck while the first holder held it:
	// Overlap.Fault names it.
	CauseFault Cause = "fault"
	// CauseUnknown: the history records no lease to judge by (a history
	// written before schema 3, or a lock that declares none).
	CauseUnknown Cause = "lease-unknown"
)

// Explain says the cause of the overlap o in a sentence for people,
// naming its fault.
func (o *Overlap) Explain() string {
	switch o.Cause {
	case CauseLiveLease:
		return "the second holder was granted the lock while the first one's lease was live on the server: a broken lock"
	case CauseRanOut:
		return "the first holder's lease ran out while it ran, with no fault or stall to stop it"
	case CausePaused:
		return "the first holder's lease ran out while a fault or a stall held it up: a lease's known limit"
	case CauseFault:
		return "the " + o.Fault + " fault removed the first holder's lock"
	case CauseUnknown:
		return "no lease recorded to judge by"
	}
	return "not recorded (a result written before overlaps had causes)"
}

// removesLock are the faults that take a lock away from its holder.
var removesLock = []string{"expire", "delete-lock", "restart", "failover"}

// running are the faults that slow a holder without stopping its node:
// its renewals go on, so they explain no lease that ran out.
var running = []string{"slow-holder"}

// expiryMargin is what a server's expiry may run ahead of the harness's
// clock besides the measured slack: a lease is set in whole
// milliseconds, and a server's clock reads whole milliseconds.
const expiryMargin = 2 * time.Millisecond

// holdRef is what the cause of an overlap reads of one holder.
type holdRef struct {
	op    *history.Op
	start int64 // the earliest its lease can have begun: the winning try, or the acquisition's call
	lease int64 // its lease, zero when unknown
}

func holdOf(h *history.History, op *history.Op) holdRef {
	start := op.GrantCall
	if start <= 0 {
		start = op.AcquireCall
	}
	if start <= 0 {
		start = op.Acquired
	}
	return holdRef{op: op, start: start, lease: h.Header.LeaseOf(op)}
}

// slackOf is the lease slack of the harness that recorded h
// (history.Health.LeaseSlack): the longest it stood still at once, or
// the embedded server's clock stepped, as it measured them.
func slackOf(h *history.History) int64 {
	hl := h.Header.Health
	if hl == nil {
		return 0
	}
	return hl.LeaseSlack()
}

// cause says why b began while a held the lock (a acquired first), and
// names the fault when one removed the lock.
func cause(h *history.History, a, b *history.Op) (Cause, string) {
	ha, hb := holdOf(h, a), holdOf(h, b)
	// A fault that removes a lock, between a's lease's start and b's
	// grant.
	for _, f := range h.Faults {
		if slices.Contains(removesLock, f.Name) && f.Start <= b.Acquired && (f.End == 0 || f.End >= ha.start) {
			return CauseFault, f.Name
		}
	}
	if ha.lease <= 0 {
		// No lease is known (an old history, a run given none): what
		// cannot be shown is never charged to the lock.
		return CauseUnknown, ""
	}
	margin := int64(expiryMargin) + slackOf(h)
	if live(ha, hb, margin) && (a.Acquired <= hb.start || live(hb, holdRef{op: a, start: ha.start}, margin) || spent(h, hb, margin)) {
		return CauseLiveLease, ""
	}
	// The lease ran out by b's grant: since its last renewal (or grant),
	// was a paused or stalled?
	from := anchor(ha, b.Acquired)
	if explained(h, a, from, b.Acquired) {
		return CausePaused, ""
	}
	return CauseRanOut, ""
}

// live reports whether a's lease was provably live when b was granted,
// b's grant being after a's: it began (or was renewed, by a renewal
// answered before b's try was sent) less than a lease, less margin,
// before b had the lock.
func live(a, b holdRef, margin int64) bool {
	lease := a.lease
	if b.lease > 0 && a.lease <= 0 {
		lease = b.lease
	}
	if lease <= 0 {
		return false
	}
	at := a.start
	for _, r := range a.op.Renewals {
		if r.OK && r.Return > 0 && r.Return <= b.start {
			at = max(at, r.Call)
		}
	}
	return b.op.Acquired+margin < at+lease
}

// spent reports whether b entered after the lease of its own winning try
// had provably run out, when its lock promises to hand out only valid
// leases (Promises.Validity): then whichever of the two was granted
// first, b held nothing while a's lease was live.
func spent(h *history.History, b holdRef, margin int64) bool {
	p := h.Header.Promises
	return p != nil && p.Validity && b.lease > 0 && b.op.Acquired-margin > b.start+b.lease
}

// anchor is the last instant a's lease was known to be set before t:
// its grant, or a renewal the server accepted.
func anchor(a holdRef, t int64) int64 {
	at := a.start
	for _, r := range a.op.Renewals {
		if r.OK && r.Call <= t {
			at = max(at, r.Call)
		}
	}
	return at
}

// explained reports whether a's lease may have run out over [from, to]
// for want of its holder: a fault struck its node, its client or the
// servers meanwhile (one that only slows the holder's own step aside);
// the harness's health is unknown, or its lease slack reached a third of
// the lease (it stood still that long at once, or the embedded server's
// clock stepped that far: a renewal sent every third of the lease may
// then come too late); or a renewal was still on its way when the lease
// ran out (from is the lease's last setting, so it ran out at
// from+lease). A renewal loop delayed by shorter stalls still renews
// within the lease.
func explained(h *history.History, a *history.Op, from, to int64) bool {
	for _, f := range h.Faults {
		end := f.End
		if end == 0 {
			end = h.Header.Duration
		}
		if end < from || f.Start > to || slices.Contains(running, f.Name) {
			continue
		}
		if f.Node < 0 || f.Node == int(a.Node) || f.Client == a.Client {
			return true
		}
	}
	lease := h.Header.LeaseOf(a)
	if h.Header.Health == nil || lease > 0 && slackOf(h) >= lease/LeaseStallShare {
		return true
	}
	out := from + lease
	for _, r := range a.Renewals {
		if r.Call <= out && (r.Return == 0 || r.Return >= out) {
			return true
		}
	}
	return false
}

// breaks reports whether an overlap of cause c breaks the lock's promise
// whatever the store's fencing.
func breaks(h *history.History, c Cause) bool {
	switch c {
	case CauseLiveLease:
		return true
	case CauseRanOut:
		return h.Header.Promises != nil && h.Header.Promises.Renewal
	}
	return false
}
