package harness

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
)

// leaseSamples is how many acquisitions of a run the lease check reads the
// server's lease of: the first ones, one PTTL each.
const leaseSamples = 8

// leaseSample is the server's lease read right after one acquisition:
// what was left, and the instants the read was sent and answered.
type leaseSample struct {
	client   int32
	left     time.Duration
	from, to int64
}

// leaseCheck reads the lock key's PTTL right after the first acquisitions
// of a run (the Acquired probe, before any fault strikes there), to
// confirm that the server holds the lease the lock says it takes.
type leaseCheck struct {
	tried   atomic.Int32
	mu      sync.Mutex
	samples []leaseSample
}

// Probe implements workload.Injector.
func (lc *leaseCheck) Probe(ctx context.Context, c *workload.Controls, at workload.Site) error {
	if at.Point != locks.Acquired || lc.tried.Load() >= leaseSamples || lc.tried.Add(1) > leaseSamples {
		return nil
	}
	from := c.Now()
	left, ok, err := c.LockLeaseLeft(ctx)
	to := c.Now()
	if err == nil && ok {
		lc.mu.Lock()
		lc.samples = append(lc.samples, leaseSample{client: at.Client, left: left, from: from, to: to})
		lc.mu.Unlock()
	}
	return nil
}

// Run implements workload.Injector.
func (lc *leaseCheck) Run(context.Context, *workload.Controls) {}

// withFaults is the lease check in front of a run's faults: it reads the
// lease, then the faults strike; routing and relays are the faults'.
type withFaults struct {
	*faults.Injector
	lease *leaseCheck
}

// Probe implements workload.Injector.
func (w withFaults) Probe(ctx context.Context, c *workload.Controls, at workload.Site) error {
	if err := w.lease.Probe(ctx, c, at); err != nil {
		return err
	}
	return w.Injector.Probe(ctx, c, at)
}

// judge says why the run's lease is not the one declared, or "": a
// sample proves the server granted at most what was left when it
// answered plus the time since the acquisition was called (a renewal or
// a later holder's grant only makes that more), and a lock whose grant
// was at most half of lease does not hold what it says. A stall of the
// harness only widens that bound: it cannot make a false alarm.
func (lc *leaseCheck) judge(h *history.History, lease time.Duration) string {
	if lease <= 0 {
		return ""
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, s := range lc.samples {
		call := int64(-1)
		for i := range h.Ops {
			op := &h.Ops[i]
			if op.Client == s.client && op.Holds() && op.AcquireCall <= s.from && s.from <= op.HoldEnd(h.Header.Duration) {
				call = op.AcquireCall
			}
		}
		if call < 0 {
			continue
		}
		granted := s.left + time.Duration(s.to-call)
		if granted < lease/2 {
			return fmt.Sprintf("lease not as declared: the server held the lock key for %v at most after an acquisition (PTTL %v, read %v after the acquisition was called), where the lock's lease is %v", granted.Round(time.Microsecond), s.left, time.Duration(s.to-call).Round(time.Microsecond), lease)
		}
	}
	return ""
}
