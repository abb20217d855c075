package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/internal/words"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/workload"
	"github.com/spf13/pflag"
)

// matrixDefaults is the small workload each cell runs: a few seconds at
// most, a short lease so that faults are short too.
var matrixDefaults = map[string]string{
	"clients":         "400",
	"stock":           "300",
	"ramp":            "500ms",
	"workers":         "20",
	"ttl":             "200ms",
	"timeout":         "10s",
	"command-timeout": "500ms",
}

const matrixExamples = `
Examples:
  # the whole truth table on the embedded server
  lockbench matrix

  # one row, against a real Redis, results saved
  lockbench matrix --impl=watchdog --redis=127.0.0.1:6379 --out=matrix1

  # one column: which implementations survive a GC pause
  lockbench matrix --faults=pause-holder

  # the smallest pause that breaks each lock: six lengths from a quarter
  # of the lease to three leases
  lockbench matrix --faults=pause-holder,pause-before-release --sweep=for=0.25x..3x/6
`

func matrixFlags(o *runOpts) *pflag.FlagSet {
	fs := runFlags(o)
	// A slice flag appends to a value set through it: set the field.
	o.impls = []string{"all"}
	fs.Lookup("impl").DefValue = "[all]"
	for name, v := range matrixDefaults {
		f := fs.Lookup(name)
		f.Value.Set(v)
		f.DefValue = v
	}
	fs.Lookup("impl").Usage = "narrow the matrix to these implementations (comma list, or all)"
	fs.Lookup("faults").Usage = "narrow the matrix to these faults (comma list of names; none is the no-fault column)"
	fs.Lookup("ttl").Usage = "lock lease of the cells that do not set their own"
	fs.String("sweep", "", "run each cell whose fault has this duration parameter once per value of a range, rising, and report the smallest value that breaks the lock: PARAM=FROM..TO[/STEPS], the ends durations (50ms) or multiples of the cell's lease (0.5x), "+fmt.Sprint(faults.DefaultSweepSteps)+" steps unless given")
	return fs
}

func matrixCmd(args []string, stdout, stderr io.Writer) error {
	var o runOpts
	fs := matrixFlags(&o)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			tidyDefaults(fs)
			fmt.Fprintf(stdout, "Usage: lockbench matrix [flags]\n\nRuns the catalog's truth table: every implementation against every fault that applies to it, on a small workload, and prints the measured verdicts next to the expected ones. Exits 1 when a cell differs.\n\nFlags:\n%s%s", fs.FlagUsages(), matrixExamples)
			return nil
		}
		return usageErr("%v (see lockbench matrix --help)", err)
	}
	fs.SetOutput(io.Discard)
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q (see lockbench matrix --help)", fs.Arg(0))
	}
	for _, name := range []string{"baseline", "repeat", "max-p99-ratio", "min-throughput-ratio", "max-commands-ratio"} {
		if fs.Changed(name) {
			return usageErr("--%s applies to runs, not to the matrix (its cells are judged against the truth table)", name)
		}
	}
	only := o.faults
	o.faults = ""
	impls, err := o.validate(fs)
	if err != nil {
		return err
	}
	o.faults = only // for the reproduce line; the cells parse their own
	cells, err := matrixCells(impls, only)
	if err != nil {
		return err
	}
	o.notRun = o.notRunCells(only)
	if s := fs.Lookup("sweep").Value.String(); s != "" {
		sw, err := faults.ParseSweep(s)
		if err != nil {
			return flagErr("sweep", err)
		}
		kept, out, err := sweepCells(cells, sw)
		if err != nil {
			return err
		}
		if len(out) > 0 {
			o.notRun = append(o.notRun, fmt.Sprintf("left out by --sweep, their fault having no %s: %s", sw.Param, strings.Join(out, ", ")))
		}
		cells, o.sweep = kept, &sw
	}
	o.warnLeftOut(stderr, " matrix")
	ctx, backend, done, err := o.start(fs)
	if err != nil {
		return err
	}
	defer done()

	result := o.newResult(strings.Replace(o.command(fs), "lockbench", "lockbench matrix", 1), impls, backend)
	sales := len(cells)
	if o.sweep != nil {
		sales *= o.sweep.Steps
	}
	progress := newProgress(stderr, o.clients, sales, o.timeout)
	if err := o.runCells(ctx, result, cells, backend, progress, stderr); err != nil {
		return err
	}
	return finishMatrix(ctx, result, &o, stdout, stderr)
}

// runCells runs the cells into result.Matrix. A cell whose fault the
// backend cannot do is skipped, and said so; any other error (a key
// prefix in use, an unreachable server) ends the matrix, as it would end
// every cell. A matrix in which no cell could run measured nothing: that
// is a usage error, never a pass.
func (o *runOpts) runCells(ctx context.Context, result *reports.Result, cells []faults.Cell, backend workload.Backend, progress *progress, stderr io.Writer) error {
	var skipped []string
	for _, cell := range cells {
		if ctx.Err() != nil {
			break
		}
		mc, err := o.runCell(ctx, cell, backend, progress)
		if err != nil {
			if errors.Is(err, faults.ErrUnavailable) {
				fmt.Fprintf(stderr, "lockbench matrix: %s skipped: %v\n", cell.Name(), err)
				skipped = append(skipped, cell.Name())
				continue
			}
			if ctx.Err() != nil && len(result.Matrix) > 0 {
				break // Ctrl-C before this cell's sale: keep the cells run
			}
			return err
		}
		result.Matrix = append(result.Matrix, mc)
	}
	if len(result.Matrix) == 0 && ctx.Err() == nil {
		return usageErr("no cell of the matrix can run on %s (skipped: %s)", backend.Name(), strings.Join(skipped, ", "))
	}
	return nil
}

// matrixCells picks the truth table's cells for impls and the faults named
// in only (all when empty).
func matrixCells(impls []locks.Impl, only string) ([]faults.Cell, error) {
	var names []string
	for _, n := range strings.Split(only, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, ok := faults.Lookup(n); !ok && n != "none" {
			return nil, usageErr("--faults: unknown fault %q; accepts none or a comma list of: %s", n, strings.Join(faults.Names(), ", "))
		}
		names = append(names, n)
	}
	var cells []faults.Cell
	for _, c := range faults.Truth {
		if !slices.ContainsFunc(impls, func(im locks.Impl) bool { return im.Name == c.Impl }) {
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
		return nil, usageErr("--impl/--faults: no cell of the truth table matches")
	}
	return cells, nil
}

// sweepCells keeps the cells whose fault has the swept parameter; the
// second result lists those it leaves out.
func sweepCells(cells []faults.Cell, sw faults.Sweep) ([]faults.Cell, []string, error) {
	var kept []faults.Cell
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
		for _, f := range faults.All {
			if sw.Applies(f) {
				with = append(with, f.Name())
			}
		}
		return nil, nil, usageErr("--sweep: no fault of the chosen cells has a duration parameter %q (faults that do: %s)", sw.Param, strings.Join(with, ", "))
	}
	return kept, out, nil
}

// cellOpts are the options one cell runs with: the matrix's, with the
// cell's own node count, lease, arrivals, timeout and fault.
func (o *runOpts) cellOpts(cell faults.Cell) runOpts {
	co := *o
	if cell.Nodes > 0 {
		co.nodes = cell.Nodes
	}
	if cell.TTL > 0 {
		co.ttl = cell.TTL
	}
	if cell.Burst {
		co.ramp = 0
	}
	if cell.Timeout > 0 && cell.Timeout < co.timeout {
		co.timeout = cell.Timeout
	}
	co.faults = cell.Entry()
	return co
}

// runCell runs one cell with the matrix's workload and judges it; under
// --sweep, once per value of the sweep.
func (o *runOpts) runCell(ctx context.Context, cell faults.Cell, backend workload.Backend, progress *progress) (reports.MatrixCell, error) {
	mc := reports.MatrixCell{Cell: cell.Name(), Impl: cell.Impl, Fault: cell.Entry(), Expected: cell.Want.Label, Why: cell.Why}
	if o.sweep != nil {
		return o.sweepCell(ctx, mc, cell, backend, progress)
	}
	run, nodes, err := o.runCellOnce(ctx, cell, cell.Entry(), "", backend, progress)
	if err != nil {
		return reports.MatrixCell{}, err
	}
	// A cell whose fault never struck tested nothing: it cannot count as
	// the expected verdict, least of all a safe one.
	struck := cellStruck(cell, run)
	mc.Measured = measured(run)
	if !struck {
		mc.Measured = notFired
	}
	mc.Nodes, mc.Run = nodes, *run
	mc.Match = struck && (cell.Want.Sometimes || meets(cell.Want, run))
	return mc, nil
}

// sweepCell runs cell once per value of the sweep, rising, and judges
// the values together (see sweepMatch).
func (o *runOpts) sweepCell(ctx context.Context, mc reports.MatrixCell, cell faults.Cell, backend workload.Backend, progress *progress) (reports.MatrixCell, error) {
	sw := o.sweep
	mc.Sweep = &reports.CellSweep{Param: sw.Param}
	var judged []sweepRun
	var last, broke *reports.Run
	var lastFault, brokeFault string
	for _, v := range sw.Values(o.cellOpts(cell).ttl) {
		if ctx.Err() != nil && last != nil {
			break // Ctrl-C: keep the values run
		}
		entry := sw.Set(cell.Entry(), v.Duration)
		run, nodes, err := o.runCellOnce(ctx, cell, entry, sw.Param+"="+v.Label, backend, progress)
		if err != nil {
			return reports.MatrixCell{}, err
		}
		mc.Nodes, last, lastFault = nodes, run, entry
		p := reports.SweepPoint{Value: v.Label, DurationMS: float64(v.Duration) / float64(time.Millisecond), Measured: measured(run), Faults: len(run.Faults)}
		struck := cellStruck(cell, run)
		judged = append(judged, sweepRun{struck: struck, meets: meets(cell.Want, run)})
		if struck {
			p.Broke = brokeLock(run)
			if p.Broke && broke == nil {
				broke, brokeFault, mc.Sweep.BreaksAt = run, entry, v.Label
			}
		} else {
			p.Measured = notFired
		}
		mc.Sweep.Points = append(mc.Sweep.Points, p)
	}
	if broke == nil {
		broke, brokeFault = last, lastFault
	}
	mc.Run, mc.Fault, mc.Measured = *broke, brokeFault, measured(broke)
	if !slices.ContainsFunc(judged, func(r sweepRun) bool { return r.struck }) {
		mc.Measured = notFired
	}
	mc.Match = sweepMatch(cell.Want, judged)
	return mc, nil
}

// sweepRun is one value of a sweep, judged: whether its fault struck and
// whether the run met the cell's expectation.
type sweepRun struct{ struck, meets bool }

// sweepMatch judges a cell's sweep: a cell expected to break must meet
// its expectation at one value at least, one expected to hold at every
// value; values whose fault never struck count for neither, and a sweep
// in which none struck tested nothing.
func sweepMatch(want faults.Expect, runs []sweepRun) bool {
	breaks := want.Lock == faults.Must || want.Data == faults.Must || want.Live == faults.Must
	struck, all, some := 0, true, false
	for _, r := range runs {
		if !r.struck {
			continue
		}
		struck++
		all = all && r.meets
		some = some || r.meets
	}
	switch {
	case struck == 0:
		return false
	case want.Sometimes:
		return true
	case breaks:
		return some
	}
	return all
}

// runCellOnce runs cell with fault entry, its history under a directory
// of --out named after the cell (and label, when a sweep gives one), and
// returns the run and the node count it ran with.
func (o *runOpts) runCellOnce(ctx context.Context, cell faults.Cell, entry, label string, backend workload.Backend, progress *progress) (*reports.Run, int, error) {
	im, _ := locks.Lookup(cell.Impl)
	co := o.cellOpts(cell)
	co.faults = entry
	specs, err := faults.Parse(entry)
	if err != nil {
		return nil, 0, err
	}
	co.specs = specs
	if o.out != "" {
		name := cell.Name()
		if label != "" {
			name += "_" + label
		}
		co.out = filepath.Join(o.out, strings.ReplaceAll(name, "/", "_"))
		if err := os.MkdirAll(co.out, 0o755); err != nil {
			return nil, 0, &exitError{code: exitInfra, err: err}
		}
	}
	for _, sp := range specs {
		if err := sp.Fault.Available(backend); err != nil {
			return nil, 0, usageErr("%w", err)
		}
	}
	run, err := co.runOne(ctx, im, backend, progress)
	if err != nil {
		return nil, 0, err
	}
	if co.out != "" {
		run.History = filepath.Join(filepath.Base(co.out), run.History)
	}
	return run, co.nodes, nil
}

// cellStruck reports whether the cell's fault struck in run (a cell
// without a fault always counts).
func cellStruck(cell faults.Cell, run *reports.Run) bool {
	return cell.Fault == "" || len(run.Faults) > 0
}

// brokeLock reports whether a run showed an overlap or an oversell.
func brokeLock(r *reports.Run) bool {
	return r.LockSafety == checker.Violated || r.DataSafety == checker.Violated || r.DataSafety == checker.Illegal
}

// notFired is what a cell measured when its fault never struck.
const notFired = "fault never fired"

// measured names what a run showed in the truth table's words.
func measured(r *reports.Run) string {
	lock := r.LockSafety == checker.Violated
	data := r.DataSafety == checker.Violated || r.DataSafety == checker.Illegal
	switch {
	case lock && data:
		return faults.OverlapOversell.Label
	case lock:
		return faults.Overlap.Label
	case data:
		return faults.Oversell.Label
	case r.DataSafety == checker.Unknown:
		return "unknown"
	case r.Liveness == checker.Violated:
		return faults.Deadlock.Label
	}
	return faults.Safe.Label
}

// meets reports whether a run shows what want expects.
func meets(want faults.Expect, r *reports.Run) bool {
	return wants(want.Lock, r.LockSafety) && wants(want.Data, r.DataSafety) && wants(want.Live, r.Liveness)
}

func wants(w faults.Want, s checker.Status) bool {
	violated := s == checker.Violated || s == checker.Illegal
	holds := s == checker.OK || s == checker.NotApplicable
	switch w {
	case faults.Must:
		return violated
	case faults.MustNot:
		return holds
	}
	return true
}

// finishMatrix prints and writes the matrix and turns it into the exit
// code: 1 when a cell differs from its expectation.
func finishMatrix(ctx context.Context, result *reports.Result, o *runOpts, stdout, stderr io.Writer) error {
	if o.out != "" {
		if err := reports.WriteFile(filepath.Join(o.out, "result.json"), result); err != nil {
			return &exitError{code: exitInfra, err: err}
		}
		if err := writeRunReport(o.out, stderr); err != nil {
			return err
		}
	}
	if o.json {
		if err := reports.WriteJSON(stdout, result); err != nil {
			return err
		}
	} else {
		writeMatrix(stdout, result, o)
	}
	if ctx.Err() != nil {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted after %s", words.Count(len(result.Matrix), "cell"))}
	}
	if o.gate.junit != "" {
		if err := writeMatrixJUnit(o.gate.junit, result); err != nil {
			return &exitError{code: exitInfra, err: fmt.Errorf("--junit: %w", err)}
		}
	}
	if reports.Differing(result.Matrix) > 0 {
		return &exitError{code: exitFail}
	}
	return nil
}

// writeMatrixJUnit writes one JUnit test case per cell, failed when the
// cell differs from the truth table.
func writeMatrixJUnit(path string, result *reports.Result) error {
	suite := reports.JUnitSuite{Name: "lockbench matrix"}
	for _, c := range result.Matrix {
		jc := reports.JUnitCase{
			Name:      c.Cell,
			ClassName: "lockbench.matrix." + c.Impl,
			Time:      time.Duration(c.Run.DurationMS * float64(time.Millisecond)),
		}
		if !c.Match {
			jc.Failure = fmt.Sprintf("expected %s, measured %s\n%s", c.Expected, c.Measured, strings.Join(c.Run.Reasons, "\n"))
		}
		suite.Cases = append(suite.Cases, jc)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := reports.WriteJUnit(f, suite); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeMatrix(w io.Writer, result *reports.Result, o *runOpts) {
	fmt.Fprintf(w, "backend: %s\n", result.Config.Backend)
	if result.Config.MySQL != "" {
		fmt.Fprintf(w, "mysql: %s\n", result.Config.MySQL)
	}
	if o.sweep != nil {
		writeSweep(w, result.Matrix, *o.sweep)
	} else {
		writeGrid(w, reports.NewGrid(result.Matrix))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CELL\tEXPECTED\tMEASURED\t\tSOLD\tOVERSOLD\tOVERLAPS\tLINEARIZABLE\tFAULTS")
		for _, c := range result.Matrix {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d\t%d\t%s\t%d\n", c.Cell, c.Expected, c.Measured, matchMark(c),
				c.Run.Sold, c.Run.Stock, c.Run.Oversold, c.Run.LockOverlaps, c.Run.Linearizability, len(c.Run.Faults))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\n%s\n", reports.MatrixSummary(result.Matrix))
	for _, n := range o.notRun {
		fmt.Fprintf(w, "  %s\n", n)
	}
	for _, c := range result.Matrix {
		if !c.Match {
			fmt.Fprintf(w, "  %s: expected %s, measured %s; reproduce: %s\n", c.Cell, c.Expected, c.Measured, o.cellCommand(c))
			for _, r := range c.Run.Reasons {
				fmt.Fprintf(w, "    %s\n", r)
			}
		}
	}
	fmt.Fprintf(w, "\nreproduce: %s\n", result.Command)
}

// writeGrid prints a matrix of several implementations and faults as a
// grid first, a row per implementation and a column per fault, each cell
// what its run showed (! where that differs from the truth table); the
// table that follows has each cell's figures.
func writeGrid(w io.Writer, g reports.Grid) {
	if len(g.Rows) < 2 || len(g.Faults) < 2 {
		return
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IMPL\t"+strings.Join(g.Faults, "\t"))
	for _, r := range g.Rows {
		row := []string{r.Impl}
		for _, c := range r.Cells {
			switch {
			case c == nil:
				row = append(row, "")
			case c.Match:
				row = append(row, reports.MeasuredMark(c.Measured))
			default:
				row = append(row, reports.MeasuredMark(c.Measured)+"!")
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		fmt.Fprint(w, strings.TrimRight(line, " \n"), strings.Repeat("\n", strings.Count(line, "\n")))
	}
	fmt.Fprintf(w, "  %s; !: differs from the truth table\n\n", reports.MarkLegend)
}

func matchMark(c reports.MatrixCell) string {
	if c.Match {
		return "ok"
	}
	return "DIFFERS"
}

// writeSweep prints a sweep as a grid: a row per cell, a column per value
// with what the run at it showed, and the smallest value that broke.
func writeSweep(w io.Writer, cells []reports.MatrixCell, sw faults.Sweep) {
	terms := "durations"
	if sw.Relative {
		terms = "multiples of each cell's lease"
	}
	fmt.Fprintf(w, "sweep: %s (%s)\n", sw, terms)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"CELL", "EXPECTED"}
	for _, v := range sw.Values(time.Second) {
		head = append(head, v.Label)
	}
	fmt.Fprintln(tw, strings.Join(append(head, "BREAKS AT", ""), "\t"))
	for _, c := range cells {
		row := []string{c.Cell, c.Expected}
		breaks := "never"
		for _, p := range c.Sweep.Points {
			row = append(row, sweepMark(p))
			if p.Value == c.Sweep.BreaksAt {
				breaks = fmt.Sprintf("%s (%s)", p.Value, time.Duration(p.DurationMS*float64(time.Millisecond)))
			}
		}
		for len(row) < len(head)-2 {
			row = append(row, "")
		}
		fmt.Fprintln(tw, strings.Join(append(row, breaks, matchMark(c)), "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w, "  "+reports.MarkLegend)
}

// sweepMark is a sweep value's run in one or two letters.
func sweepMark(p reports.SweepPoint) string { return reports.MeasuredMark(p.Measured) }

// cellCommand is the run command that reproduces one cell: the cell's
// implementation, fault and workload, the servers, and every other flag
// the matrix was given (--hold, --attempts, --pool, the images...), by the
// builder of every reproduce line.
func (o *runOpts) cellCommand(c reports.MatrixCell) string {
	co := *o
	for _, tc := range faults.Truth {
		if tc.Name() == c.Cell {
			co = o.cellOpts(tc)
		}
	}
	co.faults = c.Fault // under --sweep, with the value the cell's run had
	set := [][2]string{{"impl", c.Impl}}
	if co.faults != "" {
		set = append(set, [2]string{"faults", co.faults})
	}
	set = append(set,
		[2]string{"nodes", fmt.Sprint(co.nodes)}, [2]string{"clients", fmt.Sprint(co.clients)}, [2]string{"stock", fmt.Sprint(co.stock)},
		[2]string{"ramp", co.ramp.String()}, [2]string{"workers", fmt.Sprint(co.workers)}, [2]string{"ttl", co.ttl.String()},
		[2]string{"timeout", co.timeout.String()}, [2]string{"command-timeout", co.cmdTimeout.String()})
	switch o.backendKind {
	case backendRedis:
		set = append(set, [2]string{"redis", o.redis})
	case backendDocker:
		set = append(set, [2]string{"backend", "docker"}, [2]string{"redis-image", o.redisImage})
	}
	if o.zk != "" {
		set = append(set, [2]string{"zk", o.zk})
	}
	var dsn string
	if im, _ := locks.Lookup(c.Impl); im.Store == locks.StoreMySQL {
		dsn = o.dsnArg()
	}
	// The matrix's own flags, and the servers set above, are not the run's.
	return o.commandLine(o.flags, set, []string{"sweep", "junit", "backend", "redis", "redis-image", "zk"}, dsn)
}
