package htmlreport

import (
	"strings"
	"testing"

	"github.com/lockbench/lockbench/reports"
)

// TestComparisonJudgesNoFailingRun: a run that failed its checks (here
// set-nx-ex, which oversold) gets no better or worse colour, whatever its
// figures; a passing run's changes do; and a result of another workload
// is named as such, its changes uncoloured.
func TestComparisonJudgesNoFailingRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		clients int
		note    string
	}{
		{name: "same workload", clients: 6},
		{name: "another workload", clients: 600, note: "after ran another workload than before (clients 6 vs 600)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := fixtureResult(t), fixtureResult(t)
			for i := range b.Runs {
				b.Runs[i].Latency.Purchase.P99 /= 2 // everything twice as fast
				b.Runs[i].SalesPerSec *= 2
			}
			b.Config.Clients = tc.clients
			c := newComparison([]*Source{{Result: a}, {Result: b}}, []string{"before", "after"})
			judged := map[string]int{}
			for _, row := range c.Rows {
				cell := row.Cells[1]
				want := "better"
				if cell.Verdict != reports.Pass || tc.note != "" {
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
			if tc.note == "" {
				if judged["better"] == 0 || judged["failed"] == 0 || len(c.Notes) != 0 {
					t.Errorf("judged %v, notes %q: want passing and failing runs both, and no note", judged, c.Notes)
				}
				return
			}
			if judged["better"] != 0 || len(c.Notes) != 1 || !strings.Contains(c.Notes[0], tc.note) {
				t.Errorf("judged %v, notes %q: want nothing coloured and one note naming the clients", judged, c.Notes)
			}
		})
	}
}
