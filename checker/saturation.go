package checker

import (
	"fmt"
	"time"

	"github.com/lockbench/lockbench/history"
)

// The bounds beyond which the harness counts as saturated: starved of the
// CPU, stalled or late on its own schedule by more than the workload
// tolerates. Each is physical, not tuned to a machine: a healthy harness
// is far inside it, on a quiet machine and on a busy one alike.
const (
	// CPUWaitBound: the kernel kept the harness's threads waiting for a
	// core at least this share of the time they were ready to run, so it
	// ran at most half as fast as it asked to.
	CPUWaitBound = 0.5
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
	if hl.CPUWait >= CPUWaitBound {
		out = append(out, fmt.Sprintf("the kernel kept lockbench waiting for a CPU %.0f%% of the time it was ready to run (bound %.0f%%): the machine is busier than its %d cores",
			hl.CPUWait*100, CPUWaitBound*100, hl.CPUs))
	}
	if lease := time.Duration(h.Header.Lease); lease > 0 {
		bound := lease / LeaseStallShare
		if stall := time.Duration(hl.StallMax); stall >= bound {
			out = append(out, fmt.Sprintf("lockbench stood still for %v at once, a third of the %v lease or more (bound %v)", round(stall), lease, round(bound)))
		}
		if s := time.Duration(hl.SchedMax); s >= bound {
			out = append(out, fmt.Sprintf("a goroutine waited %v to be scheduled, a third of the %v lease or more (bound %v)", round(s), lease, round(bound)))
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
