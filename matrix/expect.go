package matrix

import (
	"fmt"
	"slices"
	"sync"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/servers"
)

// MeasuredOnly is the expectation of the cells of an implementation with
// no row: every run is measured and shown, none is judged.
var MeasuredOnly = Expect{Label: reports.MeasuredOnly}

// expected are the rows users added with AddRow.
var expected struct {
	sync.RWMutex
	cells []Cell
}

// AddRow adds the expected row of an implementation registered with
// harness.Register: the matrix then judges its cells as it judges the
// built-in ones. An implementation without a row is run against the
// faults that apply to its kind and measured only. It fails with
// ErrNoCell for a cell without an implementation and for a row of a
// built-in implementation, with ErrUnknownImpl for an implementation not
// registered yet (register it first), with ErrUnknownFault for an
// unknown fault, and with ErrDuplicate for a cell whose name (Cell.Name)
// the table already has; a row that fails adds no cell.
func AddRow(row ...Cell) error {
	expected.Lock()
	defer expected.Unlock()
	for i, c := range row {
		if c.Impl == "" {
			return fmt.Errorf("%w: a cell without an implementation", ErrNoCell)
		}
		if _, ok := harness.Lookup(c.Impl); !ok {
			return fmt.Errorf("%w %q in a row: register it with harness.Register first", ErrUnknownImpl, c.Impl)
		}
		if _, ok := faults.Lookup(c.Fault); c.Fault != "" && !ok {
			return fmt.Errorf("%w %q in the row of %s", ErrUnknownFault, c.Fault, c.Impl)
		}
		if slices.ContainsFunc(truth, func(t Cell) bool { return t.Impl == c.Impl }) {
			return fmt.Errorf("%w: %s has its row in the truth table", ErrNoCell, c.Impl)
		}
		same := func(d Cell) bool { return d.Name() == c.Name() }
		if slices.ContainsFunc(expected.cells, same) || slices.ContainsFunc(row[:i], same) {
			return fmt.Errorf("%w: %s", ErrDuplicate, c.Name())
		}
	}
	expected.cells = append(expected.cells, row...)
	return nil
}

// rows is the truth table, the rows AddRow added, and a measured-only
// row for each of impls that has neither.
func rows(impls []harness.Impl) []Cell {
	expected.RLock()
	out := append(slices.Clone(truth), expected.cells...)
	expected.RUnlock()
	for _, im := range impls {
		if slices.ContainsFunc(out, func(c Cell) bool { return c.Impl == im.Name }) {
			continue
		}
		for _, f := range measuredFaults(im) {
			out = append(out, Cell{Impl: im.Name, Fault: f, Want: MeasuredOnly})
		}
	}
	return out
}

// measuredFaults are the faults a row with no expectation runs: every
// fault on a lock's holder (faults.Fault.OnHolder) for a lock, in the
// catalog's order, the server's for every sale, the link's where the
// proxy can reach.
func measuredFaults(im harness.Impl) []string {
	out := []string{""}
	if im.Locked {
		for _, f := range faults.All() {
			if f.OnHolder() {
				out = append(out, f.Name())
			}
		}
	}
	out = append(out, "server-pause")
	if !im.Needs().Has(servers.KindMySQL) {
		out = append(out, "partition")
	}
	return out
}
