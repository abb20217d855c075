package reports

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
)

// fixtureReports are the verdicts paired with the fixture histories
// testdata/<impl>.jsonl, written by hand as the checker would.
var fixtureReports = map[string]checker.Report{
	"lua": {
		Data: checker.Data{
			Status:          checker.OK,
			Linearizability: checker.Linearizability{Status: checker.OK, Ops: 6, Segments: 3, Elapsed: 120_000},
			Sold:            4, Orders: 4, FinalStock: 0,
		},
		Lock:     checker.Lock{Status: checker.OK},
		Liveness: checker.Liveness{Status: checker.OK},
		Pass:     true,
	},
	"set-nx-ex": {
		Data: checker.Data{
			Status: checker.Violated,
			Linearizability: checker.Linearizability{
				Status: checker.Illegal, Ops: 4, Segments: 1,
				FirstIllegal: &checker.Window{From: 100_000_000, To: 1_300_800_000}, Elapsed: 310_000,
			},
			Sold: 3, Orders: 3, Oversold: 1, FinalStock: 0,
		},
		Lock: checker.Lock{
			Status:   checker.Violated,
			Overlaps: 1,
			Pairs: []checker.Overlap{{
				A:        checker.OpRef{Index: 0, Client: 0, Node: 0, From: 100_110_000, To: 1_300_240_000},
				B:        checker.OpRef{Index: 1, Client: 1, Node: 1, From: 600_200_000, To: 600_410_000},
				Duration: 210_000,
				Cause:    checker.CausePaused,
			}},
			Causes: map[checker.Cause]int{checker.CausePaused: 1},
		},
		Liveness: checker.Liveness{Status: checker.OK},
		Pass:     false,
		Reasons: []string{
			"oversold 1 unit: 3 orders for 2 units of stock.",
			"the inventory history is not linearizable (first illegal segment 100ms–1.3008s).",
			"1 lock overlap: client 1 entered at 600.2ms while client 0 held the lock since 100.11ms.",
		},
		Notes: []string{"a pause-holder fault on node 0 (100.2ms–1.3s) covers the first overlap."},
	},
	"atomic": {
		Data: checker.Data{
			Status:          checker.OK,
			Linearizability: checker.Linearizability{Status: checker.OK, Ops: 4, Segments: 4, Elapsed: 40_000},
			Sold:            3, Orders: 3, FinalStock: 0,
		},
		Lock:     checker.Lock{Status: checker.NotApplicable},
		Liveness: checker.Liveness{Status: checker.OK},
		Pass:     true,
	},
}

// fixtureOrder is the order the fixture runs appear in results.
var fixtureOrder = []string{"lua", "set-nx-ex", "atomic"}

// loadHistory reads the fixture history of impl.
func loadHistory(t *testing.T, impl string) *history.History {
	t.Helper()
	h, err := history.ReadFile(filepath.Join("testdata", impl+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// fixtureRuns builds the Runs of the fixture histories.
func fixtureRuns(t *testing.T) []Run {
	t.Helper()
	var runs []Run
	for _, impl := range fixtureOrder {
		r := NewRun(loadHistory(t, impl), fixtureReports[impl])
		r.History = "histories/" + impl + ".jsonl"
		runs = append(runs, r)
	}
	return runs
}

// fixtureResult is a whole result built from the fixtures.
func fixtureResult(t *testing.T) *Result {
	t.Helper()
	return &Result{
		Schema:  SchemaVersion,
		Version: "v0.1.0",
		Started: time.Date(2025, 11, 21, 22, 34, 5, 0, time.UTC),
		Command: "lockbench run --impl lua,set-nx-ex,atomic --clients 6 --nodes 2 --stock 4 --faults pause-holder --seed 7",
		Config: Config{
			Impls:    fixtureOrder,
			Backend:  "redis",
			Nodes:    2,
			Clients:  6,
			Stock:    4,
			Attempts: 1,
			Ramp:     Duration(time.Second),
			TTL:      Duration(500 * time.Millisecond),
			Hold:     0,
			Workers:  200,
			Seed:     7,
			Timeout:  Duration(2 * time.Minute),
			Faults:   []string{"pause-holder"},
		},
		Runs: fixtureRuns(t),
	}
}
