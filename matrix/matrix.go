// Package matrix is lockbench's truth table and the running of it: every
// implementation against every fault that applies to it (Truth), the
// cells a run picks (Select, SweepCells), each cell's plan on the
// matrix's small workload, its run through the harness and its judging
// against the expected verdict, and the flags that reproduce one cell.
package matrix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/servers"
)

// Sentinel errors of the matrix, matched with errors.Is.
var (
	// ErrNoCell means no cell of the truth table matches the choice.
	ErrNoCell = errors.New("matrix: no cell of the truth table matches")
	// ErrUnknownFault means a fault named to narrow the matrix, or in a
	// row AddRow was given, does not exist.
	ErrUnknownFault = errors.New("matrix: unknown fault")
	// ErrUnknownImpl means a cell names an implementation the harness's
	// registry does not hold: register it (harness.Register) before
	// giving it a row (AddRow).
	ErrUnknownImpl = errors.New("matrix: unknown implementation")
	// ErrDuplicate means a row AddRow was given has a cell the table
	// has already: a cell is added once.
	ErrDuplicate = errors.New("matrix: duplicate cell")
)

// Defaults is the small workload each cell runs: a few seconds at most,
// a short lease so that faults are short too.
func Defaults() harness.Workload {
	w := harness.Defaults()
	w.Clients, w.Stock, w.Ramp, w.Workers = 400, 300, 500*time.Millisecond, 20
	w.TTL, w.Timeout, w.CommandTimeout = 200*time.Millisecond, 10*time.Second, 500*time.Millisecond
	return w
}

// Select picks the truth table's cells of impls and of the faults named
// in only, a comma list (every fault when empty; none is the no-fault
// column).
func Select(impls []harness.Impl, only string) ([]Cell, error) {
	var names []string
	for _, n := range strings.Split(only, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, ok := faults.Lookup(n); !ok && n != "none" {
			return nil, fmt.Errorf("%w %q; accepts none or a comma list of: %s", ErrUnknownFault, n, strings.Join(faults.Names(), ", "))
		}
		names = append(names, n)
	}
	var cells []Cell
	for _, c := range rows(impls) {
		if !slices.ContainsFunc(impls, func(im harness.Impl) bool { return im.Name == c.Impl }) {
			continue
		}
		f := c.Fault
		if f == "" {
			f = "none"
		}
		if len(names) > 0 && !slices.Contains(names, f) {
			continue
		}
		cells = append(cells, c)
	}
	if len(cells) == 0 {
		return nil, ErrNoCell
	}
	return cells, nil
}

// SweepCells keeps the cells whose fault has the swept parameter; the
// second result names those it leaves out. None kept is ErrNoCell.
func SweepCells(cells []Cell, sw faults.Sweep) ([]Cell, []string, error) {
	var kept []Cell
	var out []string
	for _, c := range cells {
		if f, ok := faults.Lookup(c.Fault); ok && sw.Applies(f) {
			kept = append(kept, c)
		} else {
			out = append(out, c.Name())
		}
	}
	if len(kept) == 0 {
		var with []string
		for _, f := range faults.All() {
			if sw.Applies(f) {
				with = append(with, f.Name())
			}
		}
		return nil, nil, fmt.Errorf("%w: no fault of the chosen cells has a duration parameter %q (faults that do: %s)", ErrNoCell, sw.Param, strings.Join(with, ", "))
	}
	return kept, out, nil
}

// Lookup returns the cell called name ("impl/fault", see Cell.Name).
func Lookup(name string) (Cell, bool) {
	for _, c := range rows(harness.All()) {
		if c.Name() == name {
			return c, true
		}
	}
	return Cell{}, false
}

// Workload is w with the cell's own node count, lease, arrivals and
// timeout.
func (c Cell) Workload(w harness.Workload) harness.Workload {
	if c.Nodes > 0 {
		w.Nodes = c.Nodes
	}
	if c.TTL > 0 {
		w.TTL = c.TTL
	}
	if c.Burst {
		w.Ramp, w.Rate = 0, 0
	}
	if c.Timeout > 0 && c.Timeout < w.Timeout {
		w.Timeout = c.Timeout
	}
	if c.Items > 1 {
		// The matrix's stock is split among the items, and shrinks with
		// the share of readers (who buy nothing), so that the sale still
		// sells out: an item left with units is then a liveness failure,
		// not the size of the sale.
		w.Items, w.Stock = c.Items, max(1, w.Stock/int64(c.Items))
	}
	if c.Cart > 0 {
		w.Cart = c.Cart
	}
	if c.Hold > 0 {
		w.Hold = c.Hold
	}
	if c.Reads > 0 {
		w.Reads, w.Stock = c.Reads, max(1, w.Stock*int64(100-c.Reads)/100)
	}
	return w
}

// Flags are the run flags that reproduce the cell on workload w with the
// fault entry (the cell's own, or a sweep's value): its implementation,
// its fault, and the workload, in the order a reproduce line gives them.
func (c Cell) Flags(w harness.Workload, entry string) [][2]string {
	w = c.Workload(w)
	set := [][2]string{{"impl", c.Impl}}
	if entry != "" {
		set = append(set, [2]string{"faults", entry})
	}
	arrivals := [2]string{"ramp", w.Ramp.String()}
	if w.Rate > 0 {
		arrivals = [2]string{"rate", strconv.FormatFloat(w.Rate, 'g', -1, 64) + "/s"}
	}
	set = append(set,
		[2]string{"nodes", fmt.Sprint(w.Nodes)}, [2]string{"clients", fmt.Sprint(w.Clients)}, [2]string{"stock", fmt.Sprint(w.Stock)},
		arrivals, [2]string{"workers", fmt.Sprint(w.Workers)}, [2]string{"ttl", w.TTL.String()},
		[2]string{"timeout", w.Timeout.String()}, [2]string{"command-timeout", w.CommandTimeout.String()})
	if w.Hold > 0 {
		set = append(set, [2]string{"hold", w.Hold.String()})
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"items", w.Items}, {"cart", w.Cart}, {"reads", w.Reads}} {
		if f.n > 1 || f.name == "reads" && f.n > 0 {
			set = append(set, [2]string{f.name, fmt.Sprint(f.n)})
		}
	}
	return set
}

// Plan is the plan the matrix runs for the cell from base (the matrix's
// workload, seed and nodes) with the fault entry (the cell's own, or a
// sweep's value): base with the cell's implementation, fault and
// workload. Flags are the run flags that give the same plan.
func (c Cell) Plan(base harness.Plan, entry string) (harness.Plan, error) {
	im, ok := harness.Lookup(c.Impl)
	if !ok {
		return harness.Plan{}, fmt.Errorf("%w %q", ErrUnknownImpl, c.Impl)
	}
	specs, err := faults.Parse(entry)
	if err != nil {
		return harness.Plan{}, err
	}
	plan := base
	plan.Impl, plan.Faults, plan.Workload = im, specs, c.Workload(base.Workload)
	return plan, nil
}

// Options are how Run runs the cells.
type Options struct {
	// Base is the plan every cell starts from: the matrix's workload, the
	// seed, the check's bound. Its Impl and Faults are the cell's.
	Base harness.Plan
	// Sweep, when set, runs each cell once per value of the sweep.
	Sweep *faults.Sweep
	// Out, when set, is the directory each cell's history is written
	// under, in a directory named after the cell.
	Out string
	// Key, when not empty, signs each history written under Out, as a
	// run's --sign-key does (history.Key.Write): `lockbench check
	// --sign-key` verifies a cell's history like a run's.
	Key history.Key
	// Done, when set, is called after each cell is judged, with every
	// cell judged so far, in order: the caller writes them as they come,
	// so that a matrix that ends early keeps what it measured. An error
	// from Done ends the run.
	Done func(cells []reports.MatrixCell) error
}

// SaturatedRetries is how many more times RunCell runs a cell whose run
// missed its expectation while the harness was saturated (its
// Saturation not empty, or its verdict inconclusive). Each rerun has the
// same seed, so that the cell's reproduce line stays true of every try:
// what changed between tries is the machine's load, not the sale. A cell
// that misses in every try, saturated in the last, is inconclusive, not
// differing.
const SaturatedRetries = 2

// Result is what Run measured.
type Result struct {
	// Cells are the cells run, judged, in order.
	Cells []reports.MatrixCell
	// Skipped names the cells whose fault the servers cannot take, and
	// why.
	Skipped []string
}

// Run runs the cells on servers and judges each against the truth table.
// A cell whose fault the servers cannot take is skipped and named; any
// other error (a key prefix in use, a server unreachable) ends the run,
// with the cells run so far. When ctx ends, the cells run before are
// kept; the cell it cut short is not (its history may be on disk).
func Run(ctx context.Context, servers *servers.Set, cells []Cell, o Options) (Result, error) {
	var res Result
	for _, cell := range cells {
		if ctx.Err() != nil {
			break
		}
		mc, err := RunCell(ctx, servers, cell, o)
		if err != nil {
			if errors.Is(err, faults.ErrUnavailable) {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s skipped: %v", cell.Name(), err))
				continue
			}
			if ctx.Err() != nil && len(res.Cells) > 0 {
				break // interrupted before this cell's sale: keep the cells run
			}
			return res, err
		}
		if ctx.Err() != nil {
			break // interrupted during this cell: its sale was cut short, not judged
		}
		res.Cells = append(res.Cells, mc)
		if o.Done != nil {
			if err := o.Done(res.Cells); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// RunCell runs one cell (under a sweep, once per value) and judges it. A
// run that misses the cell's expectation while the harness was saturated
// is run again, up to SaturatedRetries more times with the same seed; a
// cell that still misses, saturated, is inconclusive
// (reports.InconclusiveMeasured, or NotFired when its fault never struck),
// never differing. An interrupted rerun
// keeps the try before it. A sweep's values are not rerun: a sweep that
// misses with any value's run saturated is inconclusive.
func RunCell(ctx context.Context, servers *servers.Set, cell Cell, o Options) (reports.MatrixCell, error) {
	if o.Sweep != nil {
		mc := reports.MatrixCell{Cell: cell.Name(), Impl: cell.Impl, Fault: cell.Entry(), Expected: cell.Want.Label, Why: cell.Why}
		return sweepCell(ctx, servers, mc, cell, o)
	}
	return retry(ctx, cell, func() (*reports.Run, int, error) {
		return runOnce(ctx, servers, cell, cell.Entry(), "", o)
	})
}

// retry runs cell with run and judges it, running it again while a try
// misses its expectation saturated, SaturatedRetries more times at most
// (see RunCell).
func retry(ctx context.Context, cell Cell, run func() (*reports.Run, int, error)) (reports.MatrixCell, error) {
	var mc reports.MatrixCell
	for try := 1; ; try++ {
		r, nodes, err := run()
		if err != nil {
			if try > 1 && ctx.Err() != nil {
				break // interrupted: keep the last try
			}
			return reports.MatrixCell{}, err
		}
		mc = judge(cell, r, nodes)
		if try > 1 {
			mc.Tries = try
		}
		if mc.Match || !Saturated(r) || try > SaturatedRetries || ctx.Err() != nil {
			break
		}
	}
	if !mc.Match && Saturated(&mc.Run) {
		mc.Inconclusive = true
		if mc.Measured != NotFired && mc.Measured != reports.Interrupted { // a fault that never struck, or an interrupt, says so still
			mc.Measured = reports.InconclusiveMeasured
		}
	}
	return mc, nil
}

// judge is the cell of one run of cell, judged against its expectation.
func judge(cell Cell, run *reports.Run, nodes int) reports.MatrixCell {
	mc := reports.MatrixCell{Cell: cell.Name(), Impl: cell.Impl, Fault: cell.Entry(), Expected: cell.Want.Label, Why: cell.Why}
	// A cell whose fault never struck tested nothing: it cannot count as
	// the expected verdict, least of all a safe one.
	struck := cellStruck(cell, run)
	mc.Measured = Measured(run)
	if !struck {
		mc.Measured = NotFired
	}
	mc.Nodes, mc.Run = nodes, *run
	mc.Match = struck && (cell.Want.Sometimes || cell.Want.Meets(run))
	if cell.Want.Label == reports.MeasuredOnly {
		mc.Match = true // measured, never judged: a fault that never fired says so
	}
	if !mc.Match && run.Verdict == reports.Interrupted {
		// Cut short by Ctrl-C or a lost server, not by the lock: the
		// cell was not judged to its end, and does not count as differing.
		mc.Inconclusive, mc.Measured = true, reports.Interrupted
	}
	return mc
}

// Saturated reports whether the harness that ran r was saturated beyond
// what its workload tolerates: a run whose figures, and whose timing
// faults and leases, are the harness's as much as the lock's. A run
// inconclusive only because its fault never fired is not saturated: the
// cell says NotFired.
func Saturated(r *reports.Run) bool {
	return len(r.Saturation) > 0 || r.Verdict == reports.Inconclusive && len(r.NotFired) == 0
}

// sweepCell runs cell once per value of the sweep, rising, and judges
// the values together (see SweepMatch).
func sweepCell(ctx context.Context, servers *servers.Set, mc reports.MatrixCell, cell Cell, o Options) (reports.MatrixCell, error) {
	sw := o.Sweep
	mc.Sweep = &reports.CellSweep{Param: sw.Param}
	var judged []SweepRun
	saturated := false
	var last, broke *reports.Run
	var lastFault, brokeFault string
	for _, v := range sw.Values(cell.Workload(o.Base.Workload).TTL) {
		if ctx.Err() != nil && last != nil {
			break // interrupted: keep the values run
		}
		entry := sw.Set(cell.Entry(), v.Duration)
		run, nodes, err := runOnce(ctx, servers, cell, entry, sw.Param+"="+v.Label, o)
		if err != nil {
			return reports.MatrixCell{}, err
		}
		mc.Nodes, last, lastFault = nodes, run, entry
		saturated = saturated || Saturated(run)
		p := reports.SweepPoint{Value: v.Label, DurationMS: float64(v.Duration) / float64(time.Millisecond), Measured: Measured(run), Faults: len(run.Faults), Checks: run.Checks()}
		struck := cellStruck(cell, run)
		judged = append(judged, SweepRun{Struck: struck, Meets: cell.Want.Meets(run)})
		if struck {
			p.Broke = brokeLock(run)
			if p.Broke && broke == nil {
				broke, brokeFault, mc.Sweep.BreaksAt = run, entry, v.Label
			}
		} else {
			p.Measured = NotFired
		}
		mc.Sweep.Points = append(mc.Sweep.Points, p)
	}
	if broke == nil {
		broke, brokeFault = last, lastFault
	}
	mc.Run, mc.Fault, mc.Measured = *broke, brokeFault, Measured(broke)
	if !slices.ContainsFunc(judged, func(r SweepRun) bool { return r.Struck }) {
		mc.Measured = NotFired
	}
	mc.Match = SweepMatch(cell.Want, judged)
	if !mc.Match && saturated {
		mc.Inconclusive, mc.Measured = true, reports.InconclusiveMeasured
	}
	return mc, nil
}

// SweepRun is one value of a sweep, judged: whether its fault struck and
// whether the run met the cell's expectation.
type SweepRun struct{ Struck, Meets bool }

// SweepMatch judges a cell's sweep: a cell expected to break must meet
// its expectation at one value at least, one expected to hold at every
// value; values whose fault never struck count for neither, and a sweep
// in which none struck tested nothing.
func SweepMatch(want Expect, runs []SweepRun) bool {
	struck, all, some := 0, true, false
	for _, r := range runs {
		if !r.Struck {
			continue
		}
		struck++
		all = all && r.Meets
		some = some || r.Meets
	}
	switch {
	case struck == 0:
		return false
	case want.Sometimes:
		return true
	case want.Breaks():
		return some
	}
	return all
}

// runOnce runs cell with fault entry, its history under a directory of
// Out named after the cell (and label, when a sweep gives one), and
// returns the run and the node count it ran with.
func runOnce(ctx context.Context, servers *servers.Set, cell Cell, entry, label string, o Options) (*reports.Run, int, error) {
	plan, err := cell.Plan(o.Base, entry)
	if err != nil {
		return nil, 0, err
	}
	im := plan.Impl
	res, err := harness.Run(ctx, servers, plan)
	if res.History == nil {
		return nil, 0, err
	}
	run := reports.NewRun(res.History, res.Report, res.NotFired...)
	if o.Out != "" {
		name := cell.Name()
		if label != "" {
			name += "_" + label
		}
		dir := strings.ReplaceAll(name, "/", "_")
		if err := os.MkdirAll(filepath.Join(o.Out, dir), 0o755); err != nil {
			return nil, 0, err
		}
		file := im.Name + ".history.jsonl"
		if err := o.Key.WriteFile(filepath.Join(o.Out, dir, file), res.History); err != nil {
			return nil, 0, err
		}
		run.History = filepath.Join(dir, file)
	}
	return &run, plan.Workload.Nodes, err
}

// cellStruck reports whether the cell's fault struck in run (a cell
// without a fault always counts).
func cellStruck(cell Cell, run *reports.Run) bool {
	return cell.Fault == "" || len(run.Faults) > 0
}

// brokeLock reports whether a run showed an overlap or an oversell.
func brokeLock(r *reports.Run) bool {
	return r.Lock.Status == checker.Violated || r.Data.Status == checker.Violated || r.Data.Status == checker.Illegal
}

// NotFired is what a cell measured when its fault never struck.
const NotFired = "fault never fired"

// Measured names what a run showed in the truth table's words.
func Measured(r *reports.Run) string {
	lock := r.Lock.Status == checker.Violated
	data := r.Data.Status == checker.Violated || r.Data.Status == checker.Illegal
	switch {
	case lock && data:
		return OverlapOversell.Label
	case lock:
		return Overlap.Label
	case data:
		return Oversell.Label
	case r.Data.Status == checker.Unknown:
		return "unknown"
	case r.Liveness.Status == checker.Violated:
		return Deadlock.Label
	}
	return Safe.Label
}

// Meets reports whether a run shows what e expects: each property that
// must be violated is, each that must hold does. It judges one run; a
// cell that fails only Sometimes is judged over several (RunCell counts
// such a cell as met by any run whose fault struck).
func (e Expect) Meets(r *reports.Run) bool {
	return wants(e.Lock, r.Lock.Status) && wants(e.Data, r.Data.Status) && wants(e.Live, r.Liveness.Status)
}

// Breaks reports whether e expects some property to be violated: the
// cell must fail.
func (e Expect) Breaks() bool {
	return e.Lock == Must || e.Data == Must || e.Live == Must
}

func wants(w Want, s checker.Status) bool {
	violated := s == checker.Violated || s == checker.Illegal
	holds := s == checker.OK || s == checker.NotApplicable
	switch w {
	case Must:
		return violated
	case MustNot:
		return holds
	}
	return true
}
