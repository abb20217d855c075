package reports

import (
	"slices"
	"testing"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
)

// TestMark: a grid's marks are read from the checks' statuses, and from
// whether the fault fired, never from the words of the measured verdict.
func TestMark(t *testing.T) {
	const (
		ok, na, unknown   = checker.OK, checker.NotApplicable, checker.Unknown
		violated, illegal = checker.Violated, checker.Illegal
	)
	tests := []struct {
		name   string
		checks Checks
		want   string
	}{
		{"safe", Checks{Data: ok, Lock: ok, Liveness: ok}, "ok"},
		{"safe without a lock", Checks{Data: ok, Lock: na, Liveness: ok}, "ok"},
		{"overlap", Checks{Data: ok, Lock: violated, Liveness: ok}, "L"},
		{"oversell", Checks{Data: violated, Lock: ok, Liveness: ok}, "D"},
		{"not linearizable", Checks{Data: illegal, Lock: na, Liveness: ok}, "D"},
		{"both", Checks{Data: violated, Lock: violated, Liveness: violated}, "L+D"},
		{"deadlock", Checks{Data: ok, Lock: ok, Liveness: violated}, "X"},
		{"undecided", Checks{Data: unknown, Lock: ok, Liveness: violated}, "?"},
		{"interrupted, liveness not judged", Checks{Data: ok, Lock: ok, Liveness: unknown}, "ok"},
		{"not recorded", Checks{}, "?"},
	}
	fault := []history.Fault{{Name: "expire"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.checks.Mark(); got != tt.want {
				t.Errorf("Checks.Mark() = %q, want %q", got, tt.want)
			}
			run := Run{Data: checker.Data{Status: tt.checks.Data}, Lock: checker.Lock{Status: tt.checks.Lock}, Liveness: checker.Liveness{Status: tt.checks.Liveness}, Faults: fault}
			if got := run.Checks(); got != tt.checks {
				t.Errorf("Run.Checks() = %+v, want %+v", got, tt.checks)
			}
			cell := MatrixCell{Fault: "expire", Measured: "words that say nothing", Run: run}
			if got := cell.Mark(); got != tt.want {
				t.Errorf("MatrixCell.Mark() = %q, want %q", got, tt.want)
			}
			if got := (SweepPoint{Faults: 1, Measured: "fault never fired", Checks: tt.checks}).Mark(); got != tt.want {
				t.Errorf("SweepPoint.Mark() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMarkNeverFired: a cell or a sweep value whose fault did not strike
// is marked -, whatever its run's checks say.
func TestMarkNeverFired(t *testing.T) {
	safe := Run{Data: checker.Data{Status: checker.OK}, Lock: checker.Lock{Status: checker.OK}, Liveness: checker.Liveness{Status: checker.OK}}
	struck := safe
	struck.Faults = []history.Fault{{Name: "pause-holder"}}
	tests := []struct {
		name string
		cell MatrixCell
		want string
	}{
		{"no fault", MatrixCell{Run: safe}, "ok"},
		{"the fault struck", MatrixCell{Fault: "pause-holder", Run: struck}, "ok"},
		{"the fault never fired", MatrixCell{Fault: "pause-holder", Run: safe}, "-"},
		{"a sweep struck at one value, its last run not", MatrixCell{Fault: "pause-holder:for=2s", Run: safe, Sweep: &CellSweep{
			Points: []SweepPoint{{Value: "1x", Faults: 1}, {Value: "2x"}},
		}}, "ok"},
		{"a sweep that never struck", MatrixCell{Fault: "pause-holder:for=2s", Run: safe, Sweep: &CellSweep{
			Points: []SweepPoint{{Value: "1x"}, {Value: "2x"}},
		}}, "-"},
	}
	for _, tt := range tests {
		if got := tt.cell.Mark(); got != tt.want {
			t.Errorf("%s: Mark() = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := (SweepPoint{Checks: safe.Checks()}).Mark(); got != "-" {
		t.Errorf("a sweep value with no injection: Mark() = %q, want -", got)
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

// TestMatrixSummaryInconclusive: an inconclusive cell is neither as
// expected nor differing, and an incomplete matrix says so first.
func TestMatrixSummaryInconclusive(t *testing.T) {
	ok := MatrixCell{Cell: "lua/none", Match: true}
	differs := MatrixCell{Cell: "lua/expire"}
	inconclusive := MatrixCell{Cell: "lua/slow-holder", Inconclusive: true}
	tests := []struct {
		name       string
		cells      []MatrixCell
		incomplete string
		want       string
		differ     int
	}{
		{"every cell as expected", []MatrixCell{ok, ok}, "", "2 cells, 2 as expected, 0 differ", 0},
		{"one inconclusive", []MatrixCell{ok, inconclusive}, "", "2 cells, 1 as expected, 0 differ, 1 inconclusive (harness saturated)", 0},
		{"one of each", []MatrixCell{ok, differs, inconclusive}, "", "3 cells, 1 as expected, 1 differs, 1 inconclusive (harness saturated)", 1},
		{"incomplete", []MatrixCell{ok}, "interrupted after 1 of 92 cells", "INCOMPLETE (interrupted after 1 of 92 cells): 1 cell, 1 as expected, 0 differ", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IncompleteSummary(tt.cells, tt.incomplete); got != tt.want {
				t.Errorf("summary %q, want %q", got, tt.want)
			}
			if got := Differing(tt.cells); got != tt.differ {
				t.Errorf("Differing = %d, want %d", got, tt.differ)
			}
		})
	}
}
