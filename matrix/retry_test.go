package matrix

import (
	"context"
	"testing"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/reports"
)

// TestRetrySaturated: a cell whose run misses its expectation while the
// harness was saturated runs again, SaturatedRetries more times at most;
// one that still misses saturated is inconclusive, never differing; a
// miss on a healthy harness differs at once.
func TestRetrySaturated(t *testing.T) {
	safe := &reports.Run{Verdict: reports.Pass, Faults: reports.FaultWindows{{Name: "pause-holder"}}}
	safe.Lock.Status, safe.Data.Status, safe.Liveness.Status = checker.OK, checker.OK, checker.OK
	overlap := func(saturated bool) *reports.Run {
		r := &reports.Run{Verdict: reports.Fail, Faults: reports.FaultWindows{{Name: "pause-holder"}}}
		r.Lock.Status, r.Data.Status, r.Liveness.Status = checker.Violated, checker.OK, checker.OK
		if saturated {
			r.Saturation = []string{"lockbench stood still for 300ms at once"}
		}
		return r
	}
	stuck := &reports.Run{Verdict: reports.Inconclusive, Unjudged: []string{"units left unsold"}, Faults: reports.FaultWindows{{Name: "pause-holder"}}}
	stuck.Lock.Status, stuck.Data.Status, stuck.Liveness.Status = checker.OK, checker.OK, checker.Inconclusive
	notFired := &reports.Run{Verdict: reports.Pass, Saturation: []string{"lockbench stood still for 300ms at once"}}
	notFired.Lock.Status, notFired.Data.Status, notFired.Liveness.Status = checker.OK, checker.OK, checker.OK
	cell := Cell{Impl: "lua", Fault: "pause-holder", Want: Safe}
	tests := []struct {
		name             string
		runs             []*reports.Run
		tries            int // runs used
		match, inconcl   bool
		measured         string
		wantTriesInField int
	}{
		{"as expected at once", []*reports.Run{safe}, 1, true, false, "safe", 0},
		{"a healthy miss differs at once", []*reports.Run{overlap(false), safe}, 1, false, false, "overlap", 0},
		{"a saturated miss, then as expected", []*reports.Run{overlap(true), safe}, 2, true, false, "safe", 2},
		{"saturated in every try: inconclusive", []*reports.Run{overlap(true), overlap(true), overlap(true), safe}, 3, false, true, reports.InconclusiveMeasured, 3},
		{"an inconclusive verdict counts as saturated", []*reports.Run{stuck, stuck, stuck}, 3, false, true, reports.InconclusiveMeasured, 3},
		{"saturated, then a healthy miss: differs", []*reports.Run{overlap(true), overlap(false)}, 2, false, false, "overlap", 2},
		{"a fault that never struck, saturated: inconclusive, and says so", []*reports.Run{notFired, notFired, notFired}, 3, false, true, NotFired, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			mc, err := retry(context.Background(), cell, func() (*reports.Run, int, error) {
				r := tt.runs[n]
				n++
				return r, 2, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.tries || mc.Match != tt.match || mc.Inconclusive != tt.inconcl || mc.Measured != tt.measured || mc.Tries != tt.wantTriesInField {
				t.Errorf("ran %d, match %v, inconclusive %v, measured %q, tries %d; want %d, %v, %v, %q, %d",
					n, mc.Match, mc.Inconclusive, mc.Measured, mc.Tries, tt.tries, tt.match, tt.inconcl, tt.measured, tt.wantTriesInField)
			}
			cells := []reports.MatrixCell{mc}
			if d := reports.Differing(cells); d != 0 && (tt.match || tt.inconcl) {
				t.Errorf("Differing = %d for a cell as expected or inconclusive", d)
			}
		})
	}
}
