package workload

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Arrivals is an arrival process: when each buyer of a sale is scheduled
// to arrive, as vegeta's Pacer or k6's executors decide when requests go
// out. The sale hands each buyer to its node at that instant, and the
// buyer's latency counts from it, however late the system lets the buyer
// start: a system that falls behind shows it in the latencies.
//
// Ramp and Burst are closed windows (every buyer arrives within them);
// Rate is an open model, whose buyers keep arriving at a constant rate
// whatever the system does (wrk2's -R, k6's constant-arrival-rate).
type Arrivals interface {
	// At is buyer i's scheduled arrival, of n buyers (0 <= i < n), as an
	// offset from the sale's start. It is at least FirstArrival (a
	// recorded instant of zero means "did not happen") and never less
	// than buyer i-1's. It depends on i and n alone, so that a sale's
	// schedule is the same every time, and it is called once or twice
	// per buyer, so it must be cheap for a million of them.
	At(i, n int) time.Duration
}

// FirstArrival is the earliest arrival of every process: one millisecond
// after the sale's start, so that no recorded instant is zero.
const FirstArrival = time.Millisecond

// Arrivals is the workload's arrival process: Rate's constant rate when
// Rate is above zero, else Ramp's even spread (a burst when Ramp is zero).
func (w Workload) Arrivals() Arrivals {
	if w.Rate > 0 {
		return Rate(w.Rate)
	}
	if w.Ramp > 0 {
		return Ramp(w.Ramp)
	}
	return Burst()
}

// Ramp spreads the buyers evenly over d: buyer i of n arrives at
// FirstArrival + d·i/n, so the last one arrives just before d is over.
// Ramp(0) is Burst.
func Ramp(d time.Duration) Arrivals { return ramp{d: max(d, 0)} }

type ramp struct{ d time.Duration }

func (r ramp) At(i, n int) time.Duration {
	if r.d == 0 || i <= 0 || n <= 0 {
		return FirstArrival
	}
	// d·i/n in 128 bits: a long ramp over a million buyers overflows 64.
	// i < n, so the quotient is below d and fits.
	hi, lo := bits.Mul64(uint64(r.d), uint64(min(i, n-1)))
	q, _ := bits.Div64(hi, lo, uint64(n))
	return FirstArrival + time.Duration(q)
}

func (r ramp) String() string {
	if r.d == 0 {
		return "burst"
	}
	return "ramp over " + r.d.String()
}

// Burst brings every buyer at once, at FirstArrival: the harshest
// contention a sale can see.
func Burst() Arrivals { return ramp{} }

// Rate brings perSecond buyers a second, whatever the system does: buyer
// i arrives at FirstArrival + i/perSecond. Buyers the system has not
// served yet queue on their node; their latency counts the wait. It
// panics unless perSecond is a positive, finite number (the caller checks
// what a user typed).
func Rate(perSecond float64) Arrivals {
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		panic(fmt.Sprintf("workload: Rate(%v): the rate must be a positive number of buyers per second", perSecond))
	}
	return rate{interval: float64(time.Second) / perSecond, perSecond: perSecond}
}

type rate struct {
	interval  float64 // nanoseconds between two arrivals
	perSecond float64
}

// maxOffset bounds a rate's arrivals: a rate so low that the schedule
// would overflow the clock brings its late buyers at the clock's end.
const maxOffset = time.Duration(math.MaxInt64) - FirstArrival

func (r rate) At(i, _ int) time.Duration {
	at := float64(max(i, 0)) * r.interval
	if at >= float64(maxOffset) {
		return FirstArrival + maxOffset
	}
	return FirstArrival + time.Duration(at)
}

func (r rate) String() string {
	return fmt.Sprintf("%v buyers per second", r.perSecond)
}

// arrival is buyer i's scheduled arrival, in the history's nanoseconds
// since the run's start.
func (r *run) arrival(i int) int64 { return int64(r.arrivals.At(i, r.cfg.Clients)) }
