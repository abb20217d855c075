package reports

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/words"
)

// column is one column of the summary table.
type column struct {
	title string
	// right aligns the column's cells to the right, as numbers read best.
	right bool
	cell  func(r *Run) string
}

// columns are the summary table's columns, left to right.
var columns = []column{
	{"IMPL", false, func(r *Run) string { return r.Impl }},
	{"VERDICT", false, func(r *Run) string {
		if r.Verdict == Pass {
			return Pass
		}
		// A failure should catch the eye in a column of fifteen.
		return strings.ToUpper(r.Verdict)
	}},
	{"SOLD", true, func(r *Run) string { return fmt.Sprintf("%d/%d", r.Sold, r.Stock) }},
	{"OVERSOLD", true, func(r *Run) string { return strconv.FormatInt(r.Oversold, 10) }},
	{"OVERLAPS", true, func(r *Run) string {
		if r.Lock.Status == checker.NotApplicable {
			return "-"
		}
		return strconv.Itoa(r.Lock.Overlaps)
	}},
	{"LINEARIZABLE", false, func(r *Run) string { return orDash(string(r.Linearizability.Status)) }},
	{"P50", true, func(r *Run) string { return FormatLatency(r.Latency.Purchase, r.Latency.Purchase.P50) }},
	{"P99", true, func(r *Run) string { return FormatLatency(r.Latency.Purchase, r.Latency.Purchase.P99) }},
	{"SALES/S", true, func(r *Run) string { return FormatRatio(r.SalesPerSec, r.Sold) }},
	{"CMD/SALE", true, func(r *Run) string { return FormatCommands(r, r.CommandsPerSale, r.Sold) }},
	{"CMD/ATTEMPT", true, func(r *Run) string { return FormatCommands(r, r.CommandsPerAttempt, r.Attempts) }},
}

// columnGap separates the table's columns.
const columnGap = "  "

// Detail is how much of the runs' notes the summary says.
type Detail int

// The summary's levels of detail.
const (
	// Brief folds the notes into one line per kind ("fairness"): each
	// implementation's figure, not the sentence around it, and a note
	// the implementations share said once.
	Brief Detail = iota
	// Full says every note of every implementation in full (-v).
	Full
)

// WriteTable writes the terminal summary of runs: one row per
// implementation with its verdict, safety figures and purchase latency,
// then, for each run, its blind spot when its nodes' clocks had an error
// (see BlindSpot), one line per reason if it failed, its saturation, and
// its notes, folded as detail says.
func WriteTable(w io.Writer, runs []Run, detail Detail) error {
	cells := make([][]string, 0, len(runs)+1)
	head := make([]string, len(columns))
	for i, c := range columns {
		head[i] = c.title
	}
	cells = append(cells, head)
	for i := range runs {
		row := make([]string, len(columns))
		for j, c := range columns {
			row[j] = c.cell(&runs[i])
		}
		cells = append(cells, row)
	}

	width := make([]int, len(columns))
	for _, row := range cells {
		for j, s := range row {
			width[j] = max(width[j], utf8.RuneCountInString(s))
		}
	}

	var b strings.Builder
	for _, row := range cells {
		var line strings.Builder
		for j, s := range row {
			if j > 0 {
				line.WriteString(columnGap)
			}
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(s))
			if columns[j].right {
				line.WriteString(pad + s)
			} else {
				line.WriteString(s + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}

	var details strings.Builder
	for i := range runs {
		r := &runs[i]
		if r.ClockError > 0 {
			fmt.Fprintf(&details, "  %s: %s\n", r.Impl, BlindSpot(r.ClockError))
		}
		if r.Verdict != Pass {
			for _, reason := range r.Reasons {
				fmt.Fprintf(&details, "  %s: %s\n", r.Impl, reason)
			}
		}
		if len(r.Faults) > 0 {
			fmt.Fprintf(&details, "  %s: injected %s\n", r.Impl, Injections(r.Faults))
		}
		if len(r.Saturation) > 0 {
			fmt.Fprintf(&details, "  %s: %s\n", r.Impl, SaturationLine(r))
		}
		if line := NotFiredLine(r); line != "" {
			fmt.Fprintf(&details, "  %s: %s\n", r.Impl, line)
		}
		if detail == Full {
			for _, note := range r.Notes {
				fmt.Fprintf(&details, "  %s: note: %s\n", r.Impl, note)
			}
		}
	}
	if detail == Brief {
		details.WriteString(foldNotes(runs))
	}
	if details.Len() > 0 {
		b.WriteByte('\n')
		b.WriteString(details.String())
	}

	_, err := io.WriteString(w, b.String())
	return err
}

// SaturationLine is the summary's one line on a run whose harness was
// saturated: what saturated, by how much, what it means for the verdict
// and what to change.
func SaturationLine(r *Run) string {
	what := "liveness held all the same; performance figures are the starved harness's, not the lock's"
	if r.Verdict == Inconclusive || len(r.Unjudged) > 0 {
		what = "liveness not judged (" + strings.Join(r.Unjudged, "; ") + ") and performance figures are the harness's"
	}
	return "harness saturated: " + strings.Join(r.Saturation, "; ") + ". So " + what + ". Try " + checker.Advice + "."
}

// NotFiredLine is the summary's one line on a run a fault it asked for
// never struck: "inconclusive: restart never fired: the run is no pass of
// it". Empty when every fault fired.
func NotFiredLine(r *Run) string {
	if len(r.NotFired) == 0 {
		return ""
	}
	them := "it"
	if len(r.NotFired) > 1 {
		them = "them"
	}
	return "inconclusive: " + strings.Join(r.NotFired, ", ") + " never fired: the run is no pass of " + them
}

// BlindSpot says what a clock error of ns nanoseconds hides from the
// checker, for the summary and the HTML report: "clock error ±1.20ms:
// overlaps shorter than 2.40ms cannot be seen".
func BlindSpot(ns int64) string {
	us := func(ns int64) int64 { return max(1, (ns+500)/1000) }
	return fmt.Sprintf("clock error ±%s: overlaps shorter than %s cannot be seen", FormatMicros(us(ns)), FormatMicros(us(2*ns)))
}

// FormatLatency formats us, one percentile of s, as FormatMicros does, or
// as a dash when s recorded nothing: the summary table's and the HTML
// report's latency cells.
func FormatLatency(s Summary, us int64) string {
	if s.Count == 0 {
		return "-"
	}
	return FormatMicros(us)
}

// FormatRatio formats a ratio whose denominator is d (a whole number from
// 100 up, one decimal below), or a dash when d is zero and the ratio means
// nothing.
func FormatRatio(x float64, d int64) string {
	if d == 0 {
		return "-"
	}
	if x >= 100 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 1, 64)
}

// FormatCommands formats x, r's commands per each of d sales or attempts,
// as FormatRatio does, or a dash when lockbench counted no command of r:
// a service under test, whose commands to its own servers lockbench does
// not see.
func FormatCommands(r *Run, x float64, d int64) string {
	if r.Commands == 0 {
		return "-"
	}
	return FormatRatio(x, d)
}

// orDash returns s, or a dash when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// FormatMicros formats a duration given in microseconds for a person: in
// µs below a millisecond, in ms below a second, in s above, with three
// significant figures ("850µs", "1.25ms", "12.5ms", "125ms", "3.20s").
func FormatMicros(us int64) string {
	switch {
	case us < 1000:
		return strconv.FormatInt(us, 10) + "µs"
	case us < 999_500: // what would round to 1000ms reads as 1.00s
		return sig3(float64(us)/1e3) + "ms"
	default:
		return sig3(float64(us)/1e6) + "s"
	}
}

// sig3 formats x (at least 1) with three significant figures, or as a
// whole number when it is 1000 or more.
func sig3(x float64) string {
	prec := 0
	switch {
	case x < 10:
		prec = 2
	case x < 100:
		prec = 1
	}
	s := strconv.FormatFloat(x, 'f', prec, 64)
	// Rounding may carry into the next decade: 9.996 becomes "10.00".
	if prec > 0 && len(strings.TrimLeft(strings.Replace(s, ".", "", 1), "0")) > 3 {
		s = strconv.FormatFloat(x, 'f', prec-1, 64)
	}
	return s
}

// noteKind matches the kind a note leads with ("fairness: …"): one
// lower-case word.
var noteKind = regexp.MustCompile(`^([a-z]+): `)

// longNote is the length beyond which a brief summary says a kind's note
// up to its first parenthesis only.
const longNote = 120

// foldNotes says the notes of runs briefly: for a note that leads with
// its kind, one line per kind with each implementation's gist (a long
// note up to its first parenthesis); any other note once, led by every
// implementation that has it. A last line says how to see them in full
// when anything was left out.
func foldNotes(runs []Run) string {
	type line struct {
		kind  string   // the kind, or "" for a note said whole
		text  string   // the whole note, when kind is ""
		parts []string // "impl gist", or the implementations of a whole note
	}
	var lines []*line
	byKey := map[string]*line{}
	cut := false
	for i := range runs {
		r := &runs[i]
		for _, note := range r.Notes {
			key, kind, gist := "="+note, "", r.Impl
			if m := noteKind.FindStringSubmatch(note); m != nil {
				kind = m[1]
				key, gist = kind, strings.TrimPrefix(note, m[0])
				if j := strings.Index(gist, " ("); j > 0 && len(note) > longNote {
					gist, cut = gist[:j], true
				}
				gist = r.Impl + " " + gist
			}
			l := byKey[key]
			if l == nil {
				l = &line{kind: kind, text: note}
				byKey[key] = l
				lines = append(lines, l)
			}
			l.parts = append(l.parts, gist)
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if l.kind == "" {
			fmt.Fprintf(&b, "  %s: note: %s\n", strings.Join(l.parts, ", "), l.text)
			continue
		}
		fmt.Fprintf(&b, "  note: %s: %s\n", l.kind, strings.Join(l.parts, "; "))
	}
	if cut {
		b.WriteString("  (-v says every note in full)\n")
	}
	return b.String()
}

// Injections says what faults a run injected, by name in the order they
// first struck, with how many times each did: "pause-holder ×2,
// latency ×1".
func Injections(faults []history.Fault) string {
	var names []string
	count := map[string]int{}
	for _, f := range faults {
		if count[f.Name] == 0 {
			names = append(names, f.Name)
		}
		count[f.Name]++
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " ×" + strconv.Itoa(count[n])
	}
	return strings.Join(parts, ", ")
}

// LoadLine says what the machine was doing while run r ran, for a line
// that reproduces it elsewhere or later: a rerun on a quieter or busier
// machine may answer otherwise. Empty when its health was not measured.
func LoadLine(r *Run) string {
	h := r.Health
	if h == nil {
		return ""
	}
	cores := max(h.Cores, h.CPUs, 1)
	return fmt.Sprintf("it ran beside %.1f other tasks ready to run on the machine's %s, lockbench waiting for a CPU %.0f%% of the time it was ready, its longest stall %s",
		h.Others, words.Count(int64(cores), "core"), 100*h.CPUWait, FormatMicros(max(1, h.StallMax/1000)))
}
