package workload_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/internal/safego"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// panicky is an injector of a library user's (Config.Injector) that
// panics where it is told: in Run, in a goroutine it starts with
// Controls.Go, or in Probe, inside a worker.
type panicky string

func (p panicky) Probe(context.Context, *workload.Controls, workload.Site) error {
	if p == "probe" {
		panic("the injector's Probe panicked")
	}
	return nil
}

func (p panicky) Run(ctx context.Context, c *workload.Controls) {
	switch p {
	case "run":
		panic("the injector's Run panicked")
	case "go":
		c.Go(func() { panic("the injector's goroutine panicked") })
	}
	<-ctx.Done()
}

// TestGoroutinePanicEndsRun: a panic in a goroutine the run starts (a
// worker, the fault injector's, one a fault starts, the progress
// ticker's) ends the run with an error that names it and matches
// safego.ErrPanic, and the history recorded until then, cut short: the
// process lives on.
func TestGoroutinePanicEndsRun(t *testing.T) {
	tests := []struct {
		name     string
		injector workload.Injector
		progress func(workload.Progress)
		want     string
	}{
		{"the injector's Run", panicky("run"), nil, "the injector's Run panicked"},
		{"a fault's goroutine", panicky("go"), nil, "the injector's goroutine panicked"},
		{"a probe, in a worker", panicky("probe"), nil, "the injector's Probe panicked"},
		{"the progress callback", nil, func(workload.Progress) { panic("progress panicked") }, "progress panicked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := workload.Run(t.Context(), workload.Config{
				Name: "none", Sale: sales.NoLock(), Servers: &servers.Set{Redis: redistest.Embedded(t)},
				Workload: workload.Workload{Prefix: "panic:", Clients: 40, Nodes: 2, Workers: 4, Stock: 10, Attempts: 1,
					Ramp: 100 * time.Millisecond, Timeout: time.Hour, CommandTimeout: time.Second},
				Injector: tt.injector, Progress: tt.progress,
			})
			if !errors.Is(err, safego.ErrPanic) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "panic_test.go") {
				t.Fatalf("got %v, want the panic %q with its stack (safego.ErrPanic)", err, tt.want)
			}
			if h == nil || !h.Header.CutShort {
				t.Fatalf("what was recorded is not returned, cut short: %+v", h)
			}
		})
	}
}
