package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/internal/words"
)

// MatrixCell is one measured cell of `lockbench matrix`: an implementation
// under one fault, what the truth table (matrix.Truth(), after
// docs/catalog.md) expects, and what the run showed.
type MatrixCell struct {
	// Cell names the cell, "impl/fault" ("impl/none" without a fault).
	Cell string `json:"cell"`
	// Impl is the implementation.
	Impl string `json:"impl"`
	// Fault is the fault injected, empty for none.
	Fault string `json:"fault,omitempty"`
	// Nodes is the node count the cell ran with.
	Nodes int `json:"nodes"`
	// Expected is the truth table's verdict: safe, overlap, oversell,
	// overlap, oversell, deadlock or data safe.
	Expected string `json:"expected"`
	// Measured is what the run showed, in the same words.
	Measured string `json:"measured"`
	// Match is true when the measured verdict meets the expectation.
	Match bool `json:"match"`
	// Inconclusive is true when the measured verdict missed the
	// expectation while the harness was saturated (Run.Saturation), in
	// every try: the cell says nothing of the lock, and is not counted
	// as differing. Measured is then InconclusiveMeasured.
	Inconclusive bool `json:"inconclusive,omitempty"`
	// Tries is how many times the cell ran: more than one when a
	// saturated run missed the expectation and the cell ran again (see
	// matrix.SaturatedRetries); zero in results written before it was
	// recorded, and for a cell that ran once.
	Tries int `json:"tries,omitempty"`
	// Why explains a cell whose expectation departs from the catalog (docs/catalog.md).
	Why string `json:"why,omitempty"`
	// Run is the cell's run, with its checks and figures; in a sweep, the
	// run at the smallest value that broke the lock, or at the last value
	// when none did.
	Run Run `json:"run"`
	// Sweep is the cell's sweep under `lockbench matrix --sweep`; nil
	// otherwise.
	Sweep *CellSweep `json:"sweep,omitempty"`
}

// CellSweep is one cell's sweep: the cell run once per value of one
// fault parameter, rising.
type CellSweep struct {
	// Param is the parameter swept.
	Param string `json:"param"`
	// Points are the values run, rising.
	Points []SweepPoint `json:"points"`
	// BreaksAt is the smallest value that broke the lock (an overlap or
	// an oversell), in the sweep's terms; empty when none did.
	BreaksAt string `json:"breaks_at,omitempty"`
}

// SweepPoint is one value of a sweep and what the cell's run at it showed.
type SweepPoint struct {
	// Value is the value in the sweep's terms: a multiple of the lease
	// (0.5x) or a duration (200ms).
	Value string `json:"value"`
	// DurationMS is the duration the value stood for in this cell.
	DurationMS float64 `json:"duration_ms"`
	// Measured is what the run showed, in the truth table's words.
	Measured string `json:"measured"`
	// Broke says the run showed an overlap or an oversell.
	Broke bool `json:"broke"`
	// Faults counts the injections.
	Faults int `json:"faults"`
	// Checks are the statuses of the run's checks, what its mark is read
	// from; empty in results written before they were recorded.
	Checks
}

// Checks are the statuses of a run's data, lock and liveness checks: what
// a measured verdict is read from.
type Checks struct {
	Data     checker.Status `json:"data_safety,omitempty"`
	Lock     checker.Status `json:"lock_safety,omitempty"`
	Liveness checker.Status `json:"liveness,omitempty"`
}

// Checks returns the statuses of r's checks.
func (r *Run) Checks() Checks {
	return Checks{Data: r.Data.Status, Lock: r.Lock.Status, Liveness: r.Liveness.Status}
}

// InconclusiveMeasured is the measured verdict of an inconclusive cell.
const InconclusiveMeasured = "inconclusive (harness saturated)"

// Differing counts the cells whose measured verdict missed the
// expectation, inconclusive cells aside.
func Differing(cells []MatrixCell) int {
	n := 0
	for _, c := range cells {
		if !c.Match && !c.Inconclusive {
			n++
		}
	}
	return n
}

// InconclusiveCells counts the inconclusive cells: missed while the
// harness was saturated, neither as expected nor differing.
func InconclusiveCells(cells []MatrixCell) int {
	n := 0
	for _, c := range cells {
		if !c.Match && c.Inconclusive {
			n++
		}
	}
	return n
}

// MatrixSummary is the truth table's one-line tally, as the terminal and
// the report print it: "92 cells, 92 as expected, 0 differ", then the
// inconclusive and measured-only cells when there are some.
func MatrixSummary(cells []MatrixCell) string {
	d, inc, only := Differing(cells), InconclusiveCells(cells), 0
	for _, c := range cells {
		if c.Match && c.Expected == MeasuredOnly {
			only++
		}
	}
	out := fmt.Sprintf("%s, %d as expected, %d %s", words.Count(len(cells), "cell"), len(cells)-d-inc-only, d, words.Plural(int64(d), "differs", "differ"))
	if inc > 0 {
		out += fmt.Sprintf(", %d inconclusive (harness saturated)", inc)
	}
	if only > 0 {
		out += fmt.Sprintf(", %d measured only", only)
	}
	return out
}

// IncompleteSummary is MatrixSummary of a matrix that did not run all its
// cells, saying why (Result.Incomplete): "INCOMPLETE (interrupted after
// 12 of 92 cells): 12 cells, 12 as expected, 0 differ".
func IncompleteSummary(cells []MatrixCell, why string) string {
	if why == "" {
		return MatrixSummary(cells)
	}
	return "INCOMPLETE (" + why + "): " + MatrixSummary(cells)
}

// MeasuredOnly is the expectation of a cell of an implementation that has
// no row in the truth table (one a user registered without one): its
// runs are measured, never judged.
const MeasuredOnly = "no expectation: measured only"

// Summary says in one line what each value showed and where the lock
// broke; empty for a nil sweep.
func (s *CellSweep) Summary() string {
	if s == nil {
		return ""
	}
	parts := make([]string, len(s.Points))
	for i, p := range s.Points {
		parts[i] = p.Value + " " + p.Measured
	}
	out := "sweep of " + s.Param + ": " + strings.Join(parts, " · ")
	if s.BreaksAt == "" {
		return out + "; never broke"
	}
	return out + "; breaks at " + s.BreaksAt
}

// Mark is what a run showed in one or two letters, for a grid, read from
// the statuses of its checks as the truth table reads them: ok (safe), L
// (an overlap: lock safety violated), D (an oversell: data safety violated
// or illegal), L+D (both), X (a deadlock: liveness violated), ? (data
// safety undecided, or not recorded).
func (c Checks) Mark() string {
	lock := c.Lock == checker.Violated
	data := c.Data == checker.Violated || c.Data == checker.Illegal
	switch {
	case lock && data:
		return "L+D"
	case lock:
		return "L"
	case data:
		return "D"
	case c.Data == checker.Unknown || c.Data == "":
		return "?"
	case c.Liveness == checker.Violated:
		return "X"
	}
	return "ok"
}

// Mark is what the cell's run showed in one or two letters (Checks.Mark),
// or - when the cell's fault never fired.
func (c *MatrixCell) Mark() string {
	if !c.fired() {
		return "-"
	}
	return c.Run.Checks().Mark()
}

// fired reports whether the cell's fault struck: always for a cell without
// a fault; for a sweep, at one value at least; otherwise in the cell's run.
func (c *MatrixCell) fired() bool {
	switch {
	case c.Fault == "":
		return true
	case c.Sweep != nil:
		return slices.ContainsFunc(c.Sweep.Points, func(p SweepPoint) bool { return p.Faults > 0 })
	}
	return len(c.Run.Faults) > 0
}

// Mark is what the run at this value showed in one or two letters
// (Checks.Mark), or - when the fault never fired.
func (p SweepPoint) Mark() string {
	if p.Faults == 0 {
		return "-"
	}
	return p.Checks.Mark()
}

// MarkLegend says what the letters of Mark mean.
const MarkLegend = "ok: safe; L: overlap; D: oversell; L+D: both; X: deadlock; ?: unknown; -: the fault never fired"

// InconclusiveMark follows the mark of an inconclusive cell in a grid.
const InconclusiveMark = "~"

// InconclusiveLegend says what InconclusiveMark means.
const InconclusiveLegend = "~: inconclusive, the harness was saturated"

// Grid is a matrix as implementations (rows) by faults (columns).
type Grid struct {
	// Faults are the columns: none first, then in the cells' order.
	Faults []string
	Rows   []GridRow
}

// GridRow is one implementation (with its node count, where the cell
// names one) across the faults.
type GridRow struct {
	Impl  string
	Cells []*MatrixCell // nil where the matrix has no such cell
}

// NewGrid lays cells out as a grid.
func NewGrid(cells []MatrixCell) Grid {
	var g Grid
	col := map[string]int{}
	row := map[string]int{}
	fault := func(c *MatrixCell) string {
		f, _, _ := strings.Cut(c.Fault, ":")
		if f == "" {
			return "none"
		}
		return f
	}
	for i := range cells {
		if f := fault(&cells[i]); !slices.Contains(g.Faults, f) {
			g.Faults = append(g.Faults, f)
		}
	}
	if i := slices.Index(g.Faults, "none"); i > 0 {
		g.Faults = slices.Insert(slices.Delete(g.Faults, i, i+1), 0, "none")
	}
	for i, f := range g.Faults {
		col[f] = i
	}
	for i := range cells {
		c := &cells[i]
		name, _, _ := strings.Cut(c.Cell, "/")
		if _, nodes, ok := strings.Cut(c.Cell, "@"); ok {
			name += "@" + nodes
		}
		r, ok := row[name]
		if !ok {
			r = len(g.Rows)
			row[name] = r
			g.Rows = append(g.Rows, GridRow{Impl: name, Cells: make([]*MatrixCell, len(g.Faults))})
		}
		g.Rows[r].Cells[col[fault(c)]] = c
	}
	return g
}
