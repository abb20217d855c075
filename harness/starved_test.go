package harness

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/internal/freeze"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// TestStarvedHarnessIsInconclusive cuts a sale by --timeout (a 50 ms
// business step: 5,000 sales cannot end in 1.5 s on any machine) with
// and without a real stall of the whole process in the middle of it: 1.2 s,
// more than a third of the 3 s lease, makes the harness saturated: the
// cut is inconclusive, exit 4's verdict, not a liveness failure. Without
// it, the cut is a liveness failure unless the machine itself starved the
// harness, which its saturation must then say.
func TestStarvedHarnessIsInconclusive(t *testing.T) {
	lua, _ := Lookup("lua")
	for _, stall := range []bool{false, true} {
		name := "no stall"
		if stall {
			name = "stalled"
		}
		t.Run(name, func(t *testing.T) {
			s, err := backends.Open(t.Context(), backends.Options{}, servers.Needs{servers.KindRedis})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			w := Defaults()
			w.TTL, w.Timeout, w.Hold = 3*time.Second, 1500*time.Millisecond, 50*time.Millisecond
			var once sync.Once
			var frozen <-chan error
			plan := Plan{Impl: lua, Workload: w, Seed: 1, Progress: func(workload.Progress) {
				if stall {
					once.Do(func() { frozen, err = freeze.Process(os.Getpid(), 1200*time.Millisecond) })
				}
			}}
			res, rerr := Run(t.Context(), &s.Set, plan)
			if frozen != nil {
				<-frozen
			}
			if rerr != nil || err != nil {
				t.Fatalf("Run: %v; freeze: %v", rerr, err)
			}
			run := reports.NewRun(res.History, res.Report, res.NotFired...)
			if stall && frozen == nil {
				t.Fatal("the sale ended before its first progress: nothing was frozen")
			}
			if run.Health == nil {
				t.Fatal("no health recorded")
			}
			if !run.CutShort {
				t.Fatalf("not cut short: %+v", run.Liveness)
			}
			saturated := len(run.Saturation) > 0
			switch {
			case stall && !slices.ContainsFunc(run.Saturation, func(s string) bool { return strings.Contains(s, "stood still") }):
				t.Errorf("a 1.2s freeze under a 3s lease: saturation %q, want a stall", run.Saturation)
			case saturated && (run.Verdict != reports.Inconclusive || run.Liveness.Status != checker.Inconclusive || len(run.Reasons) > 0):
				t.Errorf("saturated (%q): verdict %s, liveness %s, reasons %q; want inconclusive, no reasons", run.Saturation, run.Verdict, run.Liveness.Status, run.Reasons)
			case !saturated && (run.Verdict != reports.Fail || run.Liveness.Status != checker.Violated):
				t.Errorf("healthy harness: verdict %s, liveness %s; want a liveness failure", run.Verdict, run.Liveness.Status)
			}
			if run.Oversold != 0 || run.Lock.Overlaps != 0 && !stall {
				t.Errorf("lua oversold %d, %d overlaps", run.Oversold, run.Lock.Overlaps)
			}
		})
	}
}
