package workload

import (
	"context"
	"time"
)

// Progress is a snapshot of a running sale.
type Progress struct {
	// Impl is the implementation selling.
	Impl string
	// Started is when the sale began: a new value is a new sale.
	Started time.Time
	// Elapsed is the time since Started.
	Elapsed time.Duration
	// Arrived counts the buyers handed to their node so far, Finished
	// those done.
	Arrived, Finished int64
	// Sold counts the units sold so far, of Stock (every item's).
	Sold, Stock int64
	// Faults counts the injections in force, Injected every injection
	// so far, over or not.
	Faults, Injected int64
}

// snapshot is the sale's progress now.
func (r *run) snapshot() Progress {
	return Progress{
		Impl:     r.cfg.Name,
		Started:  r.started,
		Elapsed:  time.Since(r.started),
		Arrived:  r.arrived.Load(),
		Finished: r.finished.Load(),
		Sold:     r.sold.Load(),
		Stock:    r.cfg.Stock * int64(len(r.keys.items)),
		Faults:   r.faults.active.Load(),
		Injected: r.faults.injected.Load(),
	}
}

// tickProgress calls the Progress callback with a snapshot four times a
// second until ctx ends.
func (r *run) tickProgress(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.cfg.Progress(r.snapshot())
		}
	}
}
