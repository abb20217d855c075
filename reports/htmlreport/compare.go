package htmlreport

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/lockbench/lockbench/reports"
)

// comparison is the side-by-side view of several results: one row per
// implementation, each figure per result with its change against the
// first result that ran the implementation.
type comparison struct {
	Labels  []string
	Rows    []compareRow
	Spectra []compareSpectrum
	// Notes say which results ran another workload than the first.
	Notes []string
}

// compareRow is one implementation across the results.
type compareRow struct {
	Impl  string
	Cells []compareCell
}

// compareCell is one implementation in one result.
type compareCell struct {
	Present bool
	Verdict string
	// Class is the verdict as a CSS class (verdictClass).
	Class                 string
	P50, P99, Sales, Cmds metricCell
}

// metricCell is a figure and its change against the reference result.
type metricCell struct {
	Value string
	// Delta is the change in percent ("+12.5%"), empty in the reference.
	Delta string
	// Class is better, worse or same, for colour; failed when either run
	// failed its checks (no colour).
	Class string
}

// compareSpectrum overlays one implementation's purchase latency spectra
// from every result that ran it.
type compareSpectrum struct {
	Impl  string
	Chart template.HTML
}

// sameBand is the relative change below which a figure reads as unchanged.
const sameBand = 0.02

// newComparison lines up the implementations of the sources, in the order
// they first appear.
func newComparison(sources []*Source, labels []string) *comparison {
	c := &comparison{Labels: labels}
	// other marks the sources that ran another workload than the first:
	// their figures are shown, never coloured better or worse.
	other := make([]bool, len(sources))
	for i, s := range sources[1:] {
		if diffs := reports.WorkloadDiffs(sources[0].Result.Config, s.Result.Config); len(diffs) > 0 {
			other[i+1] = true
			c.Notes = append(c.Notes, fmt.Sprintf("%s ran another workload than %s (%s): its figures do not compare one to one, and its changes are not coloured", labels[i+1], labels[0], strings.Join(diffs, "; ")))
		}
	}
	inconclusive := false
	var order []string
	seen := map[string]bool{}
	for _, s := range sources {
		for _, r := range s.Result.Runs {
			if !seen[r.Impl] {
				seen[r.Impl] = true
				order = append(order, r.Impl)
			}
		}
	}
	for _, impl := range order {
		row := compareRow{Impl: impl}
		var ref *reports.Run
		var ss []series
		for i, s := range sources {
			r := findRun(s.Result, impl)
			if r == nil {
				row.Cells = append(row.Cells, compareCell{})
				continue
			}
			p := r.Latency.Purchase
			cell := compareCell{
				Present: true, Verdict: r.Verdict, Class: verdictClass(r.Verdict),
				P50:   metricCell{Value: reports.FormatLatency(p, p.P50)},
				P99:   metricCell{Value: reports.FormatLatency(p, p.P99)},
				Sales: metricCell{Value: reports.FormatRatio(r.SalesPerSec, r.Sold)},
				Cmds:  metricCell{Value: reports.FormatCommands(r, r.CommandsPerSale, r.Sold)},
			}
			if ref == nil {
				ref = r
			} else {
				rp := ref.Latency.Purchase
				if rp.Count > 0 && p.Count > 0 {
					cell.P50.Delta, cell.P50.Class = delta(float64(rp.P50), float64(p.P50), false)
					cell.P99.Delta, cell.P99.Class = delta(float64(rp.P99), float64(p.P99), false)
				}
				cell.Sales.Delta, cell.Sales.Class = delta(ref.SalesPerSec, r.SalesPerSec, true)
				cell.Cmds.Delta, cell.Cmds.Class = delta(ref.CommandsPerSale, r.CommandsPerSale, false)
				if r.Verdict != reports.Pass || ref.Verdict != reports.Pass || other[i] {
					// A run that failed its checks is never better nor
					// worse: its figures measure something broken. Nor is
					// an inconclusive one: its figures measure the
					// saturated harness. Nor is one of another workload:
					// its figures measure something else.
					for _, m := range []*metricCell{&cell.P50, &cell.P99, &cell.Sales, &cell.Cmds} {
						m.Class = "failed"
					}
				}
			}
			inconclusive = inconclusive || r.Verdict == reports.Inconclusive
			row.Cells = append(row.Cells, cell)
			ss = append(ss, series{name: labels[i], colour: colour(i), points: p.Spectrum})
		}
		c.Rows = append(c.Rows, row)
		c.Spectra = append(c.Spectra, compareSpectrum{Impl: impl, Chart: spectrumChart(impl+": purchase latency by percentile, per result", ss)})
	}
	if inconclusive {
		c.Notes = append(c.Notes, "An inconclusive run (amber) is neither better nor worse either: its harness was saturated, and its figures are the harness's, not the lock's.")
	}
	return c
}

// findRun returns the run of impl in r, or nil.
func findRun(r *reports.Result, impl string) *reports.Run {
	for i := range r.Runs {
		if r.Runs[i].Impl == impl {
			return &r.Runs[i]
		}
	}
	return nil
}

// delta writes the change from ref to x in percent and whether it is
// better, worse or the same; higherBetter says which way is better.
// Nothing is written when ref is zero.
func delta(ref, x float64, higherBetter bool) (string, string) {
	if ref == 0 {
		return "", ""
	}
	d := (x - ref) / ref
	class := "same"
	switch {
	case math.Abs(d) < sameBand:
	case (d > 0) == higherBetter:
		class = "better"
	default:
		class = "worse"
	}
	return fmt.Sprintf("%+.1f%%", d*100), class
}
