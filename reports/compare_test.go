package reports

import (
	"slices"
	"strings"
	"testing"
)

// TestComparisonJudgesNoFailingRun: a run that failed its checks (here
// set-nx-ex, which oversold) gets no better or worse colour, whatever its
// figures; a passing run's changes do; and a result of another workload
// is named as such.
func TestComparisonJudgesNoFailingRun(t *testing.T) {
	a, b := fixtureResult(t), fixtureResult(t)
	for i := range b.Runs {
		b.Runs[i].Latency.Purchase.P99 /= 2 // everything twice as fast
		b.Runs[i].SalesPerSec *= 2
	}
	b.Config.Clients = 600
	c := newComparison([]*Source{{Result: a}, {Result: b}}, []string{"before", "after"})
	judged := map[string]int{}
	for _, row := range c.Rows {
		cell := row.Cells[1]
		want := "better"
		if cell.Verdict != Pass {
			want = "failed"
		}
		for name, m := range map[string]metricCell{"p99": cell.P99, "sales/s": cell.Sales} {
			if m.Delta != "" && m.Class != want {
				t.Errorf("%s %s: %s is %q, want %q", row.Impl, name, m.Delta, m.Class, want)
			}
			if m.Delta != "" {
				judged[want]++
			}
		}
	}
	if judged["better"] == 0 || judged["failed"] == 0 {
		t.Errorf("judged %v: want passing and failing runs both", judged)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "after ran another workload than before (clients 6 vs 600)") {
		t.Errorf("notes %q, want one naming the clients", c.Notes)
	}
}

func TestMeasuredMark(t *testing.T) {
	for measured, want := range map[string]string{
		"safe": "ok", "overlap": "L", "oversell": "D", "overlap, oversell": "L+D",
		"deadlock": "X", "fault never fired": "-", "unknown": "?",
	} {
		if got := MeasuredMark(measured); got != want {
			t.Errorf("MeasuredMark(%q) = %q, want %q", measured, got, want)
		}
	}
}

// TestNewGrid: rows per implementation (a node count named in the cell
// is its own row), none first among the faults, holes where the matrix
// has no cell.
func TestNewGrid(t *testing.T) {
	cells := []MatrixCell{
		{Cell: "lua/pause-holder", Fault: "pause-holder"},
		{Cell: "lua/none"},
		{Cell: "local/none@1nodes"},
		{Cell: "setnx/expire", Fault: "expire:for=1s"},
	}
	g := NewGrid(cells)
	if want := []string{"none", "pause-holder", "expire"}; !slices.Equal(g.Faults, want) {
		t.Errorf("faults %q, want %q", g.Faults, want)
	}
	var impls []string
	for _, r := range g.Rows {
		impls = append(impls, r.Impl)
	}
	if want := []string{"lua", "local@1nodes", "setnx"}; !slices.Equal(impls, want) {
		t.Errorf("rows %q, want %q", impls, want)
	}
	if g.Rows[0].Cells[0] != &cells[1] || g.Rows[0].Cells[1] != &cells[0] || g.Rows[0].Cells[2] != nil || g.Rows[2].Cells[2] != &cells[3] {
		t.Errorf("cells misplaced: %+v", g.Rows)
	}
}
