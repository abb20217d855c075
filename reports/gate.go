package reports

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/checker"
)

// Thresholds bound how much worse than its baseline a run may be before
// the regression gate fails it. A ratio is current over baseline.
type Thresholds struct {
	// MaxP99Ratio is the largest purchase p99 latency ratio that passes;
	// DefaultThresholds has 4 (a p99 four times the baseline's fails).
	MaxP99Ratio float64
	// MinThroughputRatio is the smallest sales-per-second ratio that
	// passes; DefaultThresholds has 0.6 (40% fewer sales per second
	// fails).
	MinThroughputRatio float64
	// MaxCommandsRatio is the largest commands-per-sale ratio that passes;
	// DefaultThresholds has 1.75 (75% more Redis commands per sale
	// fails).
	MaxCommandsRatio float64
}

// DefaultThresholds are the gate's defaults, set from the noise measured
// on a 2-core machine (scripts/gate-noise.sh): over 21 runs of one
// workload, a run's p99 varied up to 2x (3.7x once; medians of three up
// to 2.9x), its sales per second up to 1.44x and its commands per sale up
// to 1.63x. At these thresholds no run taken as the baseline failed any of
// the others; at 1.5, 0.8 and 1.25 the worst failed 16 of 20. The tail is
// the noisiest figure: throughput and round trips are the sharper
// signals, and still catch a lock that loses 40% of its sales per second
// or takes 75% more commands.
var DefaultThresholds = Thresholds{MaxP99Ratio: 4, MinThroughputRatio: 0.6, MaxCommandsRatio: 1.75}

// The metrics a Regression can name.
const (
	// MetricSafety is a run whose data or lock safety is violated (or
	// could not be decided), a fenced store's lock overlaps aside: it
	// fails the gate whatever the baseline.
	MetricSafety = "safety"
	// MetricLiveness is a run that failed its liveness check.
	MetricLiveness = "liveness"
	// MetricP99 is the purchase latency's 99th percentile.
	MetricP99 = "p99"
	// MetricThroughput is sales per second.
	MetricThroughput = "sales_per_sec"
	// MetricCommands is Redis commands per sale.
	MetricCommands = "commands_per_sale"
)

// Regression is one way a run is worse than the gate allows.
type Regression struct {
	// Impl is the implementation that regressed.
	Impl string
	// Metric is one of the Metric constants.
	Metric string
	// Baseline and Current are the figures compared (zero for a safety or
	// liveness failure, which needs no baseline).
	Baseline, Current float64
	// Limit is the threshold ratio that was crossed (zero for a safety or
	// liveness failure).
	Limit float64
	// Detail says what failed, for a safety or liveness failure: the run's
	// reasons.
	Detail string
}

// Ratio is Current over Baseline.
func (r Regression) Ratio() float64 {
	if r.Baseline == 0 {
		return 0
	}
	return r.Current / r.Baseline
}

// String says what regressed and by how much, in one line.
func (r Regression) String() string {
	switch r.Metric {
	case MetricSafety, MetricLiveness:
		return fmt.Sprintf("%s: %s failed: %s", r.Impl, r.Metric, r.Detail)
	case MetricP99:
		return fmt.Sprintf("%s: p99 latency %s → %s (×%.2f, limit ×%.2f)", r.Impl,
			FormatMicros(int64(r.Baseline)), FormatMicros(int64(r.Current)), r.Ratio(), r.Limit)
	case MetricThroughput:
		return fmt.Sprintf("%s: sales/s %.1f → %.1f (×%.2f, limit ×%.2f)", r.Impl, r.Baseline, r.Current, r.Ratio(), r.Limit)
	case MetricCommands:
		return fmt.Sprintf("%s: commands per sale %.2f → %.2f (×%.2f, limit ×%.2f)", r.Impl, r.Baseline, r.Current, r.Ratio(), r.Limit)
	}
	return fmt.Sprintf("%s: %s %g → %g", r.Impl, r.Metric, r.Baseline, r.Current)
}

// GateReport is the regression gate's answer: a value, not an error.
type GateReport struct {
	// Regressions lists what regressed, run by run in the current result's
	// order; the gate passes when it is empty.
	Regressions []Regression
	// Notes say what could not be compared: an implementation without a
	// baseline run, or one whose harness was saturated.
	Notes []string
	// Uncompared, when set, says why no performance figure could be
	// compared at all: the baseline ran another workload. Safety and
	// liveness were judged; the gate, having compared nothing else,
	// does not pass (Pass is false) though nothing regressed.
	Uncompared string
}

// Pass reports whether nothing regressed and the baseline's figures could
// be compared.
func (g GateReport) Pass() bool { return len(g.Regressions) == 0 && g.Uncompared == "" }

// For returns the regressions of impl.
func (g GateReport) For(impl string) []Regression {
	var out []Regression
	for _, r := range g.Regressions {
		if r.Impl == impl {
			out = append(out, r)
		}
	}
	return out
}

// Gate compares current with baseline (which may be nil: then only the
// safety and liveness of current are judged). A run whose verdict is fail
// always regresses; a run that passes regresses when its purchase p99,
// sales per second or commands per sale crosses a threshold against the
// baseline run of the same implementation. A figure the baseline does not
// have (nothing sold, no latency recorded) is not compared.
func Gate(baseline, current *Result, th Thresholds) GateReport {
	var g GateReport
	base := map[string]*Run{}
	if baseline != nil {
		for i := range baseline.Runs {
			base[baseline.Runs[i].Impl] = &baseline.Runs[i]
		}
		if diffs := WorkloadDiffs(baseline.Config, current.Config); len(diffs) > 0 {
			// Figures of another workload say nothing of this one:
			// safety and liveness are judged, performance is not compared.
			g.Uncompared = "the baseline ran another workload (" + strings.Join(diffs, "; ") + "): performance not compared, safety and liveness judged"
			baseline = nil
		}
	}
	for i := range current.Runs {
		cur := &current.Runs[i]
		switch {
		case cur.Verdict == Inconclusive && len(cur.NotFired) > 0:
			g.Notes = append(g.Notes, cur.Impl+": "+NotFiredLine(cur)+": safety and liveness not passed, performance not compared")
			continue
		case cur.Verdict == Inconclusive:
			g.Notes = append(g.Notes, cur.Impl+": inconclusive (the harness was saturated): liveness not judged, performance not compared")
			continue
		case cur.Verdict == Interrupted:
			g.Notes = append(g.Notes, cur.Impl+": interrupted before its end: liveness not judged, performance not compared")
			continue
		}
		if cur.Verdict != Pass {
			metric := MetricSafety
			if safe(cur) {
				metric = MetricLiveness
			}
			g.Regressions = append(g.Regressions, Regression{
				Impl: cur.Impl, Metric: metric, Detail: failureDetail(cur),
			})
			continue
		}
		if baseline == nil {
			continue
		}
		b, ok := base[cur.Impl]
		if !ok {
			g.Notes = append(g.Notes, cur.Impl+": not in the baseline, not compared")
			continue
		}
		if len(cur.Saturation) > 0 || len(b.Saturation) > 0 {
			// A starved harness measures itself, not the lock: its
			// figures compared with anything say nothing.
			which := "this run's"
			if len(cur.Saturation) == 0 {
				which = "the baseline's"
			}
			g.Notes = append(g.Notes, cur.Impl+": performance not compared: "+which+" harness was saturated")
			continue
		}
		if b.Latency.Purchase.Count > 0 && cur.Latency.Purchase.Count > 0 {
			bp, cp := float64(b.Latency.Purchase.P99), float64(cur.Latency.Purchase.P99)
			if cp > bp*th.MaxP99Ratio {
				g.Regressions = append(g.Regressions, Regression{Impl: cur.Impl, Metric: MetricP99, Baseline: bp, Current: cp, Limit: th.MaxP99Ratio})
			}
		}
		if b.SalesPerSec > 0 && cur.SalesPerSec < b.SalesPerSec*th.MinThroughputRatio {
			g.Regressions = append(g.Regressions, Regression{Impl: cur.Impl, Metric: MetricThroughput, Baseline: b.SalesPerSec, Current: cur.SalesPerSec, Limit: th.MinThroughputRatio})
		}
		if b.CommandsPerSale > 0 && cur.CommandsPerSale > b.CommandsPerSale*th.MaxCommandsRatio {
			g.Regressions = append(g.Regressions, Regression{Impl: cur.Impl, Metric: MetricCommands, Baseline: b.CommandsPerSale, Current: cur.CommandsPerSale, Limit: th.MaxCommandsRatio})
		}
	}
	return g
}

// safe reports whether r's data and lock safety hold as its verdict
// counts them: the data checks passed, and the lock let no two owners in
// at once, or the store's fencing tokens (Lock.Fencing) made its overlaps
// a note rather than a failure, none of them breaking a promise of the
// lock (checker.Lock.Holds).
func safe(r *Run) bool {
	return r.Data.Status == checker.OK && (r.Lock.Status != checker.Violated || r.Lock.Holds())
}

// failureDetail names the failed checks of r and its reasons.
func failureDetail(r *Run) string {
	var parts []string
	for _, c := range []struct {
		name   string
		status checker.Status
	}{{"data safety", r.Data.Status}, {"lock safety", r.Lock.Status}, {"liveness", r.Liveness.Status}} {
		if c.name == "lock safety" && r.Lock.Status == checker.Violated && r.Lock.Holds() {
			continue // the overlaps of a fenced store are a note, not a failure
		}
		if c.status != checker.OK && c.status != checker.NotApplicable && c.status != "" {
			parts = append(parts, c.name+" "+string(c.status))
		}
	}
	s := strings.Join(parts, ", ")
	if len(r.Reasons) > 0 {
		if s != "" {
			s += ": "
		}
		reasons := make([]string, len(r.Reasons))
		for i, reason := range r.Reasons {
			reasons[i] = strings.TrimSuffix(reason, ".")
		}
		s += strings.Join(reasons, "; ")
	}
	if s == "" {
		s = "verdict " + r.Verdict
	}
	return s
}

// WorkloadDiffs names the settings that make a workload in which a and b
// differ, each as "clients 20000 vs 6": figures of two workloads do not
// compare. Business time (hold) is left out: it is what a change under
// test adds.
func WorkloadDiffs(a, b Config) []string {
	var out []string
	diff := func(name string, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %s vs %s", name, x, y))
		}
	}
	list := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, ",")
	}
	diff("backend", BackendKind(a.Backend), BackendKind(b.Backend))
	diff("nodes", fmt.Sprint(a.Nodes), fmt.Sprint(b.Nodes))
	diff("node mode", cmp.Or(a.NodeMode, "inproc"), cmp.Or(b.NodeMode, "inproc"))
	diff("clients", fmt.Sprint(a.Clients), fmt.Sprint(b.Clients))
	diff("stock", fmt.Sprint(a.Stock), fmt.Sprint(b.Stock))
	diff("attempts", fmt.Sprint(a.Attempts), fmt.Sprint(b.Attempts))
	diff("ramp", a.Ramp.String(), b.Ramp.String())
	diff("rate", RateString(a.Rate), RateString(b.Rate))
	diff("workers", fmt.Sprint(a.Workers), fmt.Sprint(b.Workers))
	diff("pipeline", fmt.Sprint(a.Pipeline), fmt.Sprint(b.Pipeline))
	diff("faults", list(a.Faults), list(b.Faults))
	diff("items", fmt.Sprint(max(1, a.Items)), fmt.Sprint(max(1, b.Items)))
	diff("cart", fmt.Sprint(max(1, a.Cart)), fmt.Sprint(max(1, b.Cart)))
	diff("reads", fmt.Sprint(a.Reads), fmt.Sprint(b.Reads))
	return out
}

// BackendKind is the kind of server a backend's name describes, without
// its version and address: "redis 7.0.15 at 127.0.0.1:6391" and "redis
// 7.2.4 at 127.0.0.1:7000" are both "redis", a baseline made on one
// compares with a run on the other; "redis 7.0.15 in docker (redis:7)" is
// "redis in docker (redis:7)", and "service at http://..." is "service".
func BackendKind(name string) string {
	var kept []string
	words := strings.Fields(name)
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "at":
			i++ // the address that follows
		case w[0] >= '0' && w[0] <= '9' && strings.Contains(w, "."):
			// a version
		default:
			kept = append(kept, w)
		}
	}
	return strings.Join(kept, " ")
}

// RateString writes a rate of buyers per second as --rate reads it
// ("500/s"), "none" for zero.
func RateString(perSecond float64) string {
	if perSecond == 0 {
		return "none"
	}
	return strconv.FormatFloat(perSecond, 'g', -1, 64) + "/s"
}
