package workload_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// TestCutBy: a sale whose buyers outlast its --timeout says it was cut by
// the timeout; one whose caller's context ends first (Ctrl-C) says it was
// interrupted; one that ends by itself says neither.
func TestCutBy(t *testing.T) {
	tests := []struct {
		name    string
		ramp    time.Duration
		timeout time.Duration
		parent  time.Duration // the caller's context ends after this; 0: never
		want    history.Cut
	}{
		{"finished", 0, time.Minute, 0, ""},
		{"timeout", time.Hour, 200 * time.Millisecond, 0, history.CutTimeout},
		{"interrupt", time.Hour, 2 * time.Hour, 2 * time.Second, history.CutInterrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := redistest.Embedded(t)
			ctx := t.Context()
			if tt.parent > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.parent)
				defer cancel()
			}
			h, err := workload.Run(ctx, workload.Config{
				Name: "atomic", Sale: sales.Atomic(), Servers: &servers.Set{Redis: b},
				Workload: workload.Workload{Prefix: "cut:", Clients: 20, Nodes: 1, Workers: 4, Pool: 4, Stock: 20, Attempts: 1,
					Ramp: tt.ramp, Timeout: tt.timeout, CommandTimeout: time.Second},
			})
			if err != nil {
				t.Fatal(err)
			}
			if h.Header.CutBy != tt.want || h.Header.CutShort != (tt.want != "") {
				t.Errorf("cut short %v by %q, want %q", h.Header.CutShort, h.Header.CutBy, tt.want)
			}
		})
	}
}
