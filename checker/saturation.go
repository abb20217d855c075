package checker

import (
	"fmt"
	"time"

	"github.com/lockbench/lockbench/health"
	"github.com/lockbench/lockbench/history"
)

// The bounds beyond which the harness counts as saturated: starved of the
// CPU, stalled or late on its own schedule by more than the workload
// tolerates. Each is physical, not tuned to a machine: a healthy harness
// is far inside it, on a quiet machine and on a busy one alike.
const (
	// OthersBound: other processes kept this many tasks per core ready to
	// run, on average: they alone could keep every core busy, so the
	// harness got at most about half of the CPU it asked for. (Its own
	// threads waiting for each other are not counted: a harness busy on a
	// quiet machine is not starved.) It is health's bound, at which a
	// process on its share of the CPUs takes every CPU again.
	OthersBound = health.OthersBound
	// LeaseStallShare: a stall (the whole process still, or a goroutine
	// waiting to be scheduled) of a third of the lease or more can lapse
	// a lease that is renewed at a third of it, as Redisson's watchdog
	// does, with no fault and no bug.
	LeaseStallShare = 3
	// LagBound: the harness handed a percent or more of the buyers to
	// their nodes this late or later behind their scheduled arrivals: the
	// arrival schedule (--ramp, --rate) was not kept.
	LagBound = 100 * time.Millisecond
	// PingBound: the embedded server, which runs inside lockbench's own
	// process, took this long to answer a ping: the process was starved.
	PingBound = time.Second
)

// OthersLimit is how many ready tasks of other processes, on average,
// saturate the harness that measured h: OthersBound for each of the
// machine's cores.
func OthersLimit(h *history.Health) float64 {
	return OthersBound * float64(max(h.Cores, h.CPUs, 1))
}

// saturation says how the harness that recorded h was saturated beyond
// what its workload tolerates, one sentence each with the measurement and
// the bound it crossed; nil when it was healthy, or its health was not
// measured.
//
// A saturated harness can make a correct lock look stuck or slow: its
// buyers wait for a CPU, not for the lock. Liveness is then inconclusive
// (a run that stayed live is live all the same), and its performance is
// not that of the lock. Safety is judged as ever: an oversell is an
// oversell, whatever made it happen.
func saturation(h *history.History) []string {
	hl := h.Header.Health
	if hl == nil {
		return nil
	}
	var out []string
	if hl.Others >= OthersLimit(hl) {
		out = append(out, fmt.Sprintf("other processes kept %.1f tasks ready to run on the machine's %d cores on average (bound %.0f a core): they alone could keep every core busy, and lockbench waited for a CPU %.0f%% of the time it was ready to run",
			hl.Others, max(hl.Cores, hl.CPUs, 1), OthersBound, max(0, hl.CPUWait)*100))
	}
	if lease := time.Duration(h.Header.Lease); lease > 0 {
		bound := lease / LeaseStallShare
		if stall := time.Duration(hl.StallMax); stall >= bound {
			out = append(out, fmt.Sprintf("lockbench stood still for %v at once, a third of the %v lease or more (bound %v)", round(stall), lease, round(bound)))
		}
		if s := time.Duration(hl.SchedMax); s >= bound {
			out = append(out, fmt.Sprintf("a goroutine waited %v to be scheduled, a third of the %v lease or more (bound %v)", round(s), lease, round(bound)))
		}
		if s := time.Duration(hl.ServerClockStepMax); s >= bound {
			out = append(out, fmt.Sprintf("the embedded server's clock moved %v in one step, a third of the %v lease or more (bound %v): a lease on it may have run out that much early", round(s), lease, round(bound)))
		}
	}
	if lag := time.Duration(hl.LagP99); lag >= LagBound {
		out = append(out, fmt.Sprintf("lockbench handed buyers to their nodes up to %v behind their scheduled arrivals (p99; bound %v): the arrival schedule was not kept", round(lag), LagBound))
	}
	if p := time.Duration(hl.ServerPingMax); p >= PingBound {
		out = append(out, fmt.Sprintf("the embedded server, inside lockbench's process, took %v to answer a ping (bound %v)", round(p), PingBound))
	}
	return out
}

// StuckShare: a run cut by --timeout whose last stretch without any
// progress (no lock taken, no read, write or release answered) is this
// many times the harness's lease slack (the longest it, or the embedded
// server's clock, stood still), and a second or more, was stuck, not
// slow: a starved harness still moves, in steps no longer than those.
// Its liveness failure stands, saturated or not.
const StuckShare = 4

// stuck says, when the run was cut by --timeout after a stretch without
// progress far longer than any stall the harness measured, how long that
// stretch was; "" otherwise.
func stuck(h *history.History) string {
	hl := h.Header.Health
	if hl == nil || h.Header.CutBy != history.CutTimeout {
		return ""
	}
	var last int64
	for i := range h.Ops {
		op := &h.Ops[i]
		last = max(last, op.Acquired, op.ReadReturn, op.WriteReturn, op.Released)
		if op.Outcome != history.Pending && op.Outcome != history.GaveUp && op.Outcome != history.Failed {
			last = max(last, op.End)
		}
	}
	gap := time.Duration(h.Header.Duration - last)
	stall := time.Duration(hl.LeaseSlack())
	if gap < time.Second || gap < StuckShare*stall {
		return ""
	}
	return fmt.Sprintf("nothing progressed in the last %v of the run, over %d times the longest the harness or the embedded server's clock stood still (%v): the lock was stuck, not the harness slow", round(gap), StuckShare, round(stall))
}

// Advice says what to change when the harness was saturated.
const Advice = "fewer buyers or workers (--clients, --workers), a real redis-server (--redis) instead of the embedded one, nodes in processes of their own (--node-mode=process), a longer lease (--ttl), or a quieter machine"

// round rounds d to three significant figures or so, for a sentence.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
