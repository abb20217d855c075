package reports

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checker"
)

// repetitions returns copies of the passing lua fixture run with the
// given purchase p99s and sales per second.
func repetitions(t *testing.T, p99s []int64, sales []float64) []Run {
	t.Helper()
	base := fixtureRuns(t)[0]
	reps := make([]Run, len(p99s))
	for i := range reps {
		r := base
		r.Latency.Purchase.P99 = p99s[i]
		r.Latency.Purchase.P50 = p99s[i] / 10
		acq := *base.Latency.Acquire
		acq.P99 = p99s[i] / 2
		r.Latency.Acquire = &acq
		r.SalesPerSec = sales[i]
		r.CommandsPerSale = float64(i + 1)
		r.History = "lua.rep" + string(rune('1'+i)) + ".history.jsonl"
		reps[i] = r
	}
	return reps
}

func TestCombineRepetitionsMedians(t *testing.T) {
	tests := []struct {
		name             string
		p99s             []int64
		sales            []float64
		wantP99, wantP50 int64
		wantSales        float64
		wantCmds         float64
		wantFrom         string // the representative's history
	}{
		{"odd", []int64{900, 300, 600}, []float64{10, 30, 20}, 600, 60, 20, 2, "lua.rep3.history.jsonl"},
		{"even", []int64{100, 400, 200, 301}, []float64{1, 2, 3, 4.01}, 251, 25, 2.5, 2.5, "lua.rep3.history.jsonl"},
		{"an outlier does not move it", []int64{500, 500, 90_000_000}, []float64{10, 10, 0.1}, 500, 50, 10, 2, "lua.rep2.history.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reps := repetitions(t, tt.p99s, tt.sales)
			got := CombineRepetitions(reps)
			if got.Latency.Purchase.P99 != tt.wantP99 || got.Latency.Purchase.P50 != tt.wantP50 {
				t.Errorf("purchase p50, p99 = %d, %d, want %d, %d", got.Latency.Purchase.P50, got.Latency.Purchase.P99, tt.wantP50, tt.wantP99)
			}
			if got.Latency.Acquire == nil || got.Latency.Acquire.P99 != medianInt(halves(tt.p99s)) {
				t.Errorf("acquire = %+v, want the median of the halves", got.Latency.Acquire)
			}
			if got.SalesPerSec != tt.wantSales || got.CommandsPerSale != tt.wantCmds {
				t.Errorf("sales/s, cmd/sale = %v, %v, want %v, %v", got.SalesPerSec, got.CommandsPerSale, tt.wantSales, tt.wantCmds)
			}
			if got.History != tt.wantFrom {
				t.Errorf("history = %q, want the median repetition's %q", got.History, tt.wantFrom)
			}
			if got.Verdict != Pass || len(got.Reasons) != 0 {
				t.Errorf("verdict %s, reasons %q, want a pass", got.Verdict, got.Reasons)
			}
			if len(got.Repetitions) != len(reps) || got.Repetitions[1].P99 != tt.p99s[1] || got.Repetitions[0].History != "lua.rep1.history.jsonl" {
				t.Errorf("repetitions = %+v", got.Repetitions)
			}
			// The inputs are left as they were.
			if reps[0].Latency.Purchase.P99 != tt.p99s[0] || reps[0].Latency.Acquire.P99 != tt.p99s[0]/2 {
				t.Errorf("CombineRepetitions changed its input")
			}
		})
	}
}

func halves(xs []int64) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = x / 2
	}
	return out
}

func TestCombineRepetitionsAnyFailureFails(t *testing.T) {
	reps := repetitions(t, []int64{100, 200, 300}, []float64{1, 2, 3})
	bad := fixtureRuns(t)[1] // set-nx-ex, failed
	bad.Impl = "lua"
	reps[2] = bad
	got := CombineRepetitions(reps)
	if got.Verdict != Fail {
		t.Fatalf("verdict %s, want fail", got.Verdict)
	}
	if got.Lock.Status != checker.Violated || got.Data.Status != checker.Violated || got.Linearizability.Status != checker.Illegal {
		t.Errorf("statuses lock %s, data %s, lin %s: want the failing repetition's", got.Lock.Status, got.Data.Status, got.Linearizability.Status)
	}
	if len(got.Reasons) != len(bad.Reasons) || !strings.HasPrefix(got.Reasons[0], "repetition 3 of 3: ") {
		t.Errorf("reasons = %q, want the failing repetition's, prefixed", got.Reasons)
	}
	// The counts and overlaps are those of the failing repetition, so the
	// report draws the violation.
	if got.Oversold != 1 || got.Lock.Overlaps != 1 || !reflect.DeepEqual(got.Lock.Pairs, bad.Lock.Pairs) {
		t.Errorf("oversold %d, overlaps %d: want the failing repetition's", got.Oversold, got.Lock.Overlaps)
	}
	if got.Repetitions[2].Verdict != Fail || got.Repetitions[0].Verdict != Pass {
		t.Errorf("repetitions = %+v", got.Repetitions)
	}
	if n := got.Notes[len(got.Notes)-1]; !strings.Contains(n, "median of 3 repetitions") || !strings.Contains(n, "repetition 3") {
		t.Errorf("last note %q does not say where the figures come from", n)
	}
}

func TestCombineRepetitionsOne(t *testing.T) {
	r := fixtureRuns(t)[0]
	if got := CombineRepetitions([]Run{r}); !reflect.DeepEqual(got, r) {
		t.Errorf("one repetition changed: %+v", got)
	}
	if got := CombineRepetitions(nil); got.Impl != "" {
		t.Errorf("no repetitions gave %+v", got)
	}
}
