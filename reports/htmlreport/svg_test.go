package htmlreport

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockbench/lockbench/reports"
)

// TestBandKeepsLabelsApart gives a band more labels at one instant than
// its rows hold, and one at the plot's right edge: each label it places
// lies within the band and clear of every other on its row, and those it
// has no room for are left out.
func TestBandKeepsLabelsApart(t *testing.T) {
	bd := band{lo: 50, hi: chartW - 4, max: 3}
	for i := range 5 {
		bd.add(60, "pause-holder node 1 client "+strconv.Itoa(60+i), "faultlabel")
	}
	bd.add(chartW-10, "latency node 0", "faultlabel")
	if got, want := len(bd.labels), 4; got != want {
		t.Errorf("placed %d labels, want %d (three at the instant, one per row, and the one at the edge)", got, want)
	}
	if got := bd.rows(); got != 3 {
		t.Errorf("%d rows, want 3", got)
	}
	for i, a := range bd.labels {
		aw := textWidth(a.text, true)
		if a.x < bd.lo || a.x+aw > bd.hi {
			t.Errorf("%q spans %.0f–%.0f, outside %.0f–%.0f", a.text, a.x, a.x+aw, bd.lo, bd.hi)
		}
		for _, b := range bd.labels[:i] {
			if a.row == b.row && a.x < b.x+textWidth(b.text, true)+labelGap && b.x < a.x+aw+labelGap {
				t.Errorf("%q and %q share row %d", a.text, b.text, a.row)
			}
		}
	}
}

// TestXTicksStandApart draws more tick labels than an axis has room for:
// those drawn keep apart and stay within the chart.
func TestXTicksStandApart(t *testing.T) {
	var ticks []tick
	for k := range 12 {
		ticks = append(ticks, tick{float64(k), nines(k)})
	}
	var b svg
	xTicks(&b, ticks, func(k float64) float64 { return 40 + k*30 }, 100, 40, 380)
	re := regexp.MustCompile(`<text class="tick" x="([0-9.]+)" y="[0-9.]+" text-anchor="(start|middle|end)">([^<]+)</text>`)
	drawn := re.FindAllStringSubmatch(b.String(), -1)
	if len(drawn) < 3 || len(drawn) == len(ticks) {
		t.Fatalf("drew %d of %d labels, want some left out and at least 3:\n%s", len(drawn), len(ticks), b.String())
	}
	end := 0.0
	for _, m := range drawn {
		x, _ := strconv.ParseFloat(m[1], 64)
		w := textWidth(m[3], false)
		x0 := map[string]float64{"start": x, "middle": x - w/2, "end": x - w}[m[2]]
		if x0 < 40 || x0+w > 380 {
			t.Errorf("%q spans %.0f–%.0f, outside 40–380", m[3], x0, x0+w)
		}
		if x0 < end+labelGap {
			t.Errorf("%q starts at %.0f, within %d of the label before, which ends at %.0f", m[3], x0, labelGap, end)
		}
		end = x0 + w
	}
}

// TestSalesChartLabelRows draws the fixture's set-nx-ex, whose first
// illegal segment starts 0.2 ms before its pause: the two labels, at the
// same place on the time axis, are on different rows over the plot.
func TestSalesChartLabelRows(t *testing.T) {
	res := fixtureResult(t)
	r := &res.Runs[1]
	if r.FirstIllegal == nil || len(r.Faults) == 0 {
		t.Fatal("the fixture's set-nx-ex has no first illegal segment or no fault")
	}
	chart := string(salesChart("set-nx-ex", r, sharedAxes(res.Runs)))
	y := func(class string) string {
		m := regexp.MustCompile(`<text class="` + class + `" x="[0-9.]+" y="([0-9.]+)"`).FindStringSubmatch(chart)
		if m == nil {
			t.Fatalf("no %s in the chart:\n%s", class, chart)
		}
		return m[1]
	}
	if il, fl := y("illegallabel"), y("faultlabel"); il == fl {
		t.Errorf("the first illegal segment's label and the fault's are both at y=%s", il)
	}
}

// TestRecoverySentences: one sentence a fault window, one for all the
// windows of a fault that struck several times.
func TestRecoverySentences(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name string
		recs []reports.Recovery
		want []string
	}{
		{"none", nil, nil},
		{"one window", []reports.Recovery{{Fault: "pause-holder", After: ms(300)}},
			[]string{"After pause-holder the p99 was back within twice its level before the faults 300ms after the fault ended."}},
		{"one window, never back", []reports.Recovery{{Fault: "restart", Never: true}},
			[]string{"After restart the p99 did not come back within twice its level before the faults."}},
		{"several windows of one fault, and another", []reports.Recovery{
			{Fault: "pause-holder", After: ms(100)}, {Fault: "expire", After: ms(50)},
			{Fault: "pause-holder", After: ms(300)}, {Fault: "pause-holder", Never: true}, {Fault: "pause-holder", After: ms(200)},
		}, []string{
			"After the 4 pause-holder windows the p99 was back within twice its level before the faults 200ms after a window ended at the median, 300ms at the longest; after 1 it never was.",
			"After expire the p99 was back within twice its level before the faults 50.0ms after the fault ended.",
		}},
		{"several windows, never back", []reports.Recovery{{Fault: "latency", Never: true}, {Fault: "latency", Never: true}},
			[]string{"After none of the 2 latency windows did the p99 come back within twice its level before the faults."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := recoverySentences(tt.recs); !slices.Equal(got, tt.want) {
				t.Errorf("recoverySentences =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
