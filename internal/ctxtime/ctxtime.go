// Package ctxtime holds the one timing helper that locks, faults,
// workload and sentinels share.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d and returns nil, or returns ctx's cause as soon as ctx
// ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
