package history

import (
	"cmp"
	"slices"
)

// Discount takes out of h, one node's health, the spans in which the
// harness itself stopped the node's process (stops, on the run's clock:
// the SIGSTOP or docker pause of a fault, up to its continue or the
// process's end). A node stopped on purpose stands still, and its
// monitor's timer wakes as late as the stop was long; that is the fault
// doing its work, not the harness starved, and left in it would make
// every run of a pause on process nodes read as saturated.
//
// Each starved span is cut by the stops, each widened by slack at both
// ends (the monitor's timer began its sleep up to a tick before the stop,
// and wakes a little after the continue). What is left of a span, StarvedAt or
// longer, stays starved. StallMax becomes the longest piece left, of the
// spans cut and of the others (a piece's length is the stall it stands
// for, within the timer's tick), or StallP99 when nothing is left (a
// stall shorter than StarvedAt is not spanned), at most StarvedAt: never
// more than it was. StallP99 is kept at most StallMax.
// StallMax is lowered only when a span the stops cut could hold the
// stall it names: a stall no stop explains (one whose span was not kept,
// or a stop of the whole process group that the harness did not make,
// such as a Ctrl-Z) counts as ever.
//
// SchedMax is left alone: the scheduler's latencies have no timestamps,
// so a goroutine's wait across a stop cannot be told from a wait of the
// same length at another time. A node is paused inside first (every
// client waits on its pause), so that few goroutines are runnable when
// the stop comes; a SchedMax as long as a stop is rare, and when it
// happens it is reported, as a stall that cannot be explained is.
func (h *Health) Discount(stops []Span, slack int64) {
	if len(stops) == 0 || len(h.Starved) == 0 {
		return
	}
	stops = slices.Clone(stops)
	slices.SortFunc(stops, func(a, b Span) int { return cmp.Compare(a.From, b.From) })
	var kept []Span
	var longest, cutLongest int64
	cut := false
	for _, s := range h.Starved {
		pieces := cutOut(s, stops, slack)
		if len(pieces) == 1 && pieces[0] == s {
			kept = append(kept, s)
			longest = max(longest, s.To-s.From)
			continue
		}
		cut = true
		cutLongest = max(cutLongest, s.To-s.From)
		for _, p := range pieces {
			longest = max(longest, p.To-p.From)
			if p.To-p.From >= int64(StarvedAt) {
				kept = append(kept, p)
			}
		}
	}
	if !cut {
		return
	}
	h.Starved = kept
	if cutLongest < h.StallMax {
		return // the longest stall lies in no span a stop cut
	}
	// A stall that no span holds is under StarvedAt. StallP99 stands for
	// those, bounded by it: when the stops are a percent of the timer's
	// wake-ups or more (a node stopped six times 400 ms in a run of 3 s),
	// the 99th percentile is a stop's lateness itself.
	h.StallMax = min(h.StallMax, max(longest, min(h.StallP99, int64(StarvedAt))))
	h.StallP99 = min(h.StallP99, h.StallMax)
}

// cutOut is what is left of s once the stops, sorted by their start and
// each widened by slack at both ends, are taken out of it.
func cutOut(s Span, stops []Span, slack int64) []Span {
	var out []Span
	from := s.From
	for _, st := range stops {
		lo, hi := st.From-slack, st.To+slack
		if hi <= from || lo >= s.To {
			continue
		}
		if lo > from {
			out = append(out, Span{From: from, To: lo})
		}
		from = max(from, hi)
		if from >= s.To {
			return out
		}
	}
	return append(out, Span{From: from, To: s.To})
}
