package workload

import (
	"context"
	"time"
)

// Progress is a snapshot of a running sale.
type Progress struct {
	Impl string
	// Started is when the sale began: a new value is a new sale.
	Started  time.Time
	Elapsed  time.Duration
	Arrived  int64
	Finished int64
	Sold     int64
	Stock    int64
	Faults   int64 // injections in force
}

// snapshot is the sale's progress now.
func (r *run) snapshot() Progress {
	return Progress{
		Impl:     r.cfg.Name,
		Started:  r.base,
		Elapsed:  time.Since(r.base),
		Arrived:  r.arrived.Load(),
		Finished: r.finished.Load(),
		Sold:     r.sold.Load(),
		Stock:    r.cfg.Stock,
		Faults:   r.faults.active.Load(),
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
