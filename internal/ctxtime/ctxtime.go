// Package ctxtime holds the one timing helper that locks and faults share.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends, and then returns ctx's cause.
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
