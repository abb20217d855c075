package checker

import (
	"math"
	"slices"
	"time"

	"github.com/lockbench/lockbench/history"
)

// A history whose nodes ran on clocks of their own (Header.ClockError,
// ε > 0) has each node's instants mapped onto the coordinator's timeline
// with an offset known only to within ε: a recorded instant t stands for
// some true instant in [t-ε, t+ε]. A clock error within ε must never
// produce a false violation, so the checks judge the history widened:
// every call ε earlier and every return ε later (see widen).
//
// Every violation the checks prove is of one form, "this returned before
// that was called": a linearizability violation (an operation that
// returned before another was called, yet must come after it), an overlap
// (a hold, which runs from a return, Acquired, to a call, ReleaseCall or
// Crash, that began before another ended). Widening moves each such
// return later and each such call earlier by ε, so a violation stands
// only when it stands whatever the clocks did: two holds count as
// overlapping only when they overlap by more than 2ε. ε is the checker's
// blind spot, and the report says so (Report.ClockError).
//
// Two checks compare like with like instead, and widening moves both
// sides alike: fairness (a call against a call, a grant against a grant)
// and the liveness audit of refused writes (a grant against a return).
// They add 2ε themselves, in the direction that cannot invent a finding
// (see fairnessMargin and checkLiveness).

// widen returns h as the checks judge it: when its header declares a clock
// error ε > 0, a copy whose operations' calls (Start, AcquireCall,
// GrantCall, ReadCall, WriteCall, ReleaseCall, each renewal's call, and
// Crash, when a killed client stopped holding) are ε earlier and whose
// returns (Acquired, ReadReturn, WriteReturn, Released, End, each
// renewal's return) are ε later; h itself when there is none.
// h is never changed. Arrivals (the coordinator's schedule), fault
// windows and the run's Duration (the coordinator's own instants) do not
// move. An instant that did not happen (zero) stays zero, and one moved
// earlier stays at 1 at least, so that it still happened. A hold may
// shrink to nothing (Acquired after its ReleaseCall): checkLock leaves it
// out. A step's order may change too (Acquired after ReadCall): the
// checks read each instant against the ones of other operations, never
// assume that order, and Validate is not asked again.
//
// The copy keeps the header's ClockError, which fairnessMargin and
// checkLiveness read; widen is applied once, at the checker's entry
// points (Check, Visualize), never to a widened history.
func widen(h *history.History) *history.History {
	eps := h.Header.ClockError
	if eps <= 0 {
		return h
	}
	w := *h
	w.Ops = make([]history.Op, len(h.Ops))
	for i, op := range h.Ops {
		for _, t := range []*int64{&op.Start, &op.AcquireCall, &op.GrantCall, &op.ReadCall, &op.WriteCall, &op.ReleaseCall, &op.Crash} {
			*t = earlier(*t, eps)
		}
		for _, t := range []*int64{&op.Acquired, &op.ReadReturn, &op.WriteReturn, &op.Released, &op.End} {
			*t = later(*t, eps)
		}
		if len(op.Renewals) > 0 {
			op.Renewals = slices.Clone(op.Renewals)
			for k := range op.Renewals {
				op.Renewals[k].Call = earlier(op.Renewals[k].Call, eps)
				op.Renewals[k].Return = later(op.Renewals[k].Return, eps)
			}
		}
		w.Ops[i] = op
	}
	return &w
}

// earlier moves a call instant t by eps towards the run's start, staying
// at 1 at least; zero, an instant that did not happen, stays zero.
func earlier(t, eps int64) int64 {
	if t <= 0 {
		return t
	}
	return max(1, t-eps)
}

// later moves a return instant t by eps towards the run's end; zero, an
// instant that did not happen, stays zero.
func later(t, eps int64) int64 {
	if t <= 0 {
		return t
	}
	if t > math.MaxInt64-eps {
		return math.MaxInt64
	}
	return t + eps
}

// slack is what a comparison of two instants of h of the same kind (two
// calls, two grants) must add to be sure of their order whatever the
// clocks did: 2ε, each side being off by up to ε in either direction.
func slack(h *history.History) int64 { return 2 * max(0, h.Header.ClockError) }

// fairnessMargin is how much earlier a waiter of h must have asked for
// the lock to count as ahead of a later one: FairnessMargin, plus the
// clock error's slack.
func fairnessMargin(h *history.History) time.Duration {
	return FairnessMargin + time.Duration(slack(h))
}
