package reports

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockbench/lockbench/checker"
)

// Repetition keeps the figures of one repetition of an implementation's
// run under --repeat, so that a result shows the spread the medians come
// from.
type Repetition struct {
	// Verdict is the repetition's own verdict.
	Verdict string `json:"verdict"`
	// P50 and P99 are its purchase latency percentiles, in microseconds.
	P50 int64 `json:"p50_us"`
	P99 int64 `json:"p99_us"`
	// SalesPerSec is its units sold per second.
	SalesPerSec float64 `json:"sales_per_sec"`
	// CommandsPerSale is its server commands per unit sold.
	CommandsPerSale float64 `json:"commands_per_sale"`
	// DurationMS is its length in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// History is its saved history file, relative to result.json's
	// directory; empty when not kept.
	History string `json:"history,omitempty"`
}

// CombineRepetitions folds repeated runs of one implementation into one
// Run, so that a gate on a noisy machine compares medians rather than one
// draw. The performance figures (every latency figure but the spectrum,
// sales per second, commands per sale and per attempt, duration) are the
// medians over the repetitions; the verdict fails when any repetition
// failed, and each status is the worst any repetition had. Everything else
// (counts, overlaps, faults, the spectrum, the sales series, the history)
// comes from one representative repetition: the first that failed, or, when
// all passed, the one with the median purchase p99, so that the history a
// report draws is the one its figures describe. One repetition is returned
// as it is.
func CombineRepetitions(reps []Run) Run {
	switch len(reps) {
	case 0:
		return Run{}
	case 1:
		return reps[0]
	}
	byP99 := make([]int, len(reps))
	for i := range byP99 {
		byP99[i] = i
	}
	slices.SortStableFunc(byP99, func(a, b int) int {
		return cmp.Compare(reps[a].Latency.Purchase.P99, reps[b].Latency.Purchase.P99)
	})
	rep := byP99[(len(reps)-1)/2]
	for i := range reps {
		if reps[i].Verdict == Fail {
			rep = i
			break
		}
	}

	out := reps[rep]
	out.Reasons, out.Notes = []string{}, []string{}
	out.Repetitions = make([]Repetition, len(reps))
	for i := range reps {
		r := &reps[i]
		out.Repetitions[i] = Repetition{
			Verdict: r.Verdict, P50: r.Latency.Purchase.P50, P99: r.Latency.Purchase.P99,
			SalesPerSec: r.SalesPerSec, CommandsPerSale: r.CommandsPerSale,
			DurationMS: r.DurationMS, History: r.History,
		}
		switch {
		case r.Verdict == Interrupted && out.Verdict != Fail:
			// A repetition cut short leaves the whole unfinished.
			out.Verdict = Interrupted
		case r.Verdict == Inconclusive && out.Verdict != Fail && out.Verdict != Interrupted:
			out.Verdict = Inconclusive
		case r.Verdict == Inconclusive || r.Verdict == Interrupted:
		case r.Verdict != Pass:
			out.Verdict = Fail
			for _, s := range r.Reasons {
				out.Reasons = append(out.Reasons, fmt.Sprintf("repetition %d of %d: %s", i+1, len(reps), s))
			}
		}
		if i == rep {
			out.Notes = append(out.Notes, r.Notes...)
		}
		out.Data.Status = checker.Worse(out.Data.Status, r.Data.Status)
		out.Lock.Status = checker.Worse(out.Lock.Status, r.Lock.Status)
		out.Liveness.Status = checker.Worse(out.Liveness.Status, r.Liveness.Status)
		out.Linearizability.Status = checker.Worse(out.Linearizability.Status, r.Linearizability.Status)
	}
	out.Notes = append(out.Notes, fmt.Sprintf("median of %d repetitions; counts, overlaps and charts are those of repetition %d", len(reps), rep+1))

	out.Latency.Purchase = medianSummary(reps, func(r *Run) *Summary { return &r.Latency.Purchase }, out.Latency.Purchase)
	if out.Latency.Acquire != nil {
		s := medianSummary(reps, func(r *Run) *Summary { return r.Latency.Acquire }, *out.Latency.Acquire)
		out.Latency.Acquire = &s
	}
	out.SalesPerSec = medianFloat(reps, func(r *Run) float64 { return r.SalesPerSec })
	out.CommandsPerSale = medianFloat(reps, func(r *Run) float64 { return r.CommandsPerSale })
	out.CommandsPerAttempt = medianFloat(reps, func(r *Run) float64 { return r.CommandsPerAttempt })
	out.DurationMS = medianFloat(reps, func(r *Run) float64 { return r.DurationMS })
	return out
}

// medianSummary returns base with every figure but the spectrum replaced
// by its median over the repetitions that have a summary.
func medianSummary(reps []Run, get func(*Run) *Summary, base Summary) Summary {
	var ss []*Summary
	for i := range reps {
		if s := get(&reps[i]); s != nil {
			ss = append(ss, s)
		}
	}
	med := func(f func(*Summary) int64) int64 {
		xs := make([]int64, len(ss))
		for i, s := range ss {
			xs[i] = f(s)
		}
		return medianInt(xs)
	}
	base.Count = med(func(s *Summary) int64 { return s.Count })
	base.Min = med(func(s *Summary) int64 { return s.Min })
	base.P50 = med(func(s *Summary) int64 { return s.P50 })
	base.P90 = med(func(s *Summary) int64 { return s.P90 })
	base.P99 = med(func(s *Summary) int64 { return s.P99 })
	base.P999 = med(func(s *Summary) int64 { return s.P999 })
	base.Max = med(func(s *Summary) int64 { return s.Max })
	means := make([]float64, len(ss))
	for i, s := range ss {
		means[i] = s.Mean
	}
	base.Mean = median(means)
	return base
}

// medianFloat is the median of f over the runs.
func medianFloat(reps []Run, f func(*Run) float64) float64 {
	xs := make([]float64, len(reps))
	for i := range reps {
		xs[i] = f(&reps[i])
	}
	return median(xs)
}

// median returns the middle value of xs, or the mean of the two middle
// ones for an even count, rounded to 0.01; zero for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return round2((s[n/2-1] + s[n/2]) / 2)
}

// medianInt is median for whole numbers, an even count's mean rounded
// half up.
func medianInt(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2] + 1) / 2
}
