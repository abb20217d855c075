package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/atomicfile"
	"github.com/lockbench/lockbench/internal/words"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/servers"
	"github.com/spf13/pflag"
)

// matrixDefaults are the flags' defaults of the matrix: its small
// workload (matrix.Defaults).
func matrixDefaults() map[string]string {
	w := matrix.Defaults()
	return map[string]string{
		"clients":         fmt.Sprint(w.Clients),
		"stock":           fmt.Sprint(w.Stock),
		"ramp":            w.Ramp.String(),
		"workers":         fmt.Sprint(w.Workers),
		"ttl":             w.TTL.String(),
		"timeout":         w.Timeout.String(),
		"command-timeout": w.CommandTimeout.String(),
	}
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
	for name, v := range matrixDefaults() {
		f := fs.Lookup(name)
		f.Value.Set(v)
		f.DefValue = v
	}
	fs.Lookup("impl").Usage = "narrow the matrix to these implementations (comma list, or all)"
	fs.Lookup("faults").Usage = "narrow the matrix to these faults (comma list of names; none is the no-fault column)"
	fs.Lookup("ttl").Usage = "lock lease of the cells that do not set their own"
	fs.Lookup("timeout").Usage = "bound on each cell's sale; one cut short is a liveness failure"
	fs.Lookup("junit").Usage = "write a JUnit XML report to this file: one test case per cell, failed when it differs from the truth table"
	// The gate's flags are refused here (runsOnly): they stay out of the
	// help too.
	for _, f := range runsOnly {
		fs.MarkHidden(f.name)
	}
	fs.String("sweep", "", "run each cell whose fault has this duration parameter once per value of a range, rising, and report the smallest value that breaks the lock: PARAM=FROM..TO[/STEPS], the ends durations (50ms) or multiples of the cell's lease (0.5x), "+fmt.Sprint(faults.DefaultSweepSteps)+" steps unless given")
	return fs
}

// runsOnly are the run's flags the matrix refuses, each with why: a
// cell is judged against the truth table, not a baseline; the matrix
// prints cells, not notes; its cells run faults, which a pipeline does
// not.
var runsOnly = []struct{ name, why string }{
	{"baseline", "its cells are judged against the truth table"},
	{"repeat", "its cells are judged against the truth table"},
	{"max-p99-ratio", "its cells are judged against the truth table"},
	{"min-throughput-ratio", "its cells are judged against the truth table"},
	{"max-commands-ratio", "its cells are judged against the truth table"},
	{"verbose", "it prints cells, not notes"},
	{"pipeline", "its cells run faults, which a pipeline does not"},
}

func matrixCmd(args []string, stdout, stderr io.Writer) error {
	var o runOpts
	fs := matrixFlags(&o)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			tidyDefaults(fs)
			fmt.Fprintf(stdout, "Usage: lockbench matrix [flags]\n\nRuns the catalog's truth table: every implementation against every fault that applies to it, on a small workload, and prints the measured verdicts next to the expected ones. A cell that misses its expectation while the harness is saturated runs again, twice at most, and is inconclusive if it still misses saturated. Exits 1 when a cell differs, 4 when none differs but one is inconclusive, 3 when a server is lost, 130 on Ctrl-C; with --out, each cell is written as it finishes, and a matrix that ends early still writes the cells done, marked incomplete.\n\nFlags:\n%s%s", fs.FlagUsages(), matrixExamples)
			return nil
		}
		return usageErr("%v (see lockbench matrix --help)", err)
	}
	fs.SetOutput(io.Discard)
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q (see lockbench matrix --help)", fs.Arg(0))
	}
	for _, f := range runsOnly {
		if fs.Changed(f.name) {
			return usageErr("--%s applies to runs, not to the matrix (%s)", f.name, f.why)
		}
	}
	only := o.faults
	o.faults = ""
	impls, err := o.validate(fs)
	if err != nil {
		return err
	}
	o.faults = only // for the reproduce line; the cells parse their own
	cells, err := matrix.Select(impls, only)
	if err != nil {
		return matrixErr(err)
	}
	o.notRun = o.notRunCells(only)
	if s := fs.Lookup("sweep").Value.String(); s != "" {
		sw, err := faults.ParseSweep(s)
		if err != nil {
			return flagErr("sweep", err)
		}
		kept, out, err := matrix.SweepCells(cells, sw)
		if err != nil {
			return flagErr("sweep", err)
		}
		if len(out) > 0 {
			o.notRun = append(o.notRun, fmt.Sprintf("left out by --sweep, their fault having no %s: %s", sw.Param, strings.Join(out, ", ")))
		}
		cells, o.sweep = kept, &sw
	}
	o.warnLeftOut(stderr, " matrix")
	ctx, done, err := o.start(fs)
	if err != nil {
		return err
	}
	defer done()

	result := o.newResult(o.command("matrix"), impls)
	sales := len(cells)
	if o.sweep != nil {
		sales *= o.sweep.Steps
	}
	progress := newProgress(stderr, o.clients, sales, o.timeout)
	plan := o.plan(harness.Impl{}, progress)
	plan.Faults = nil
	opts := matrix.Options{Base: plan, Sweep: o.sweep, Out: o.out, Key: o.signKey}
	if o.out != "" {
		// Each cell is kept as it is judged: its history is written by
		// the cell's run, result.json (atomically) here, so that a matrix
		// killed outright still leaves the cells done, marked incomplete.
		opts.Done = func(done []reports.MatrixCell) error {
			result.Matrix = done
			result.Incomplete = fmt.Sprintf("in progress: %d of %s run", len(done), words.Count(len(cells), "cell"))
			if err := reports.WriteFile(filepath.Join(o.out, "result.json"), result); err != nil {
				return &exitError{code: exitInfra, err: fmt.Errorf("--out: %w", err)}
			}
			return nil
		}
	}
	res, err := matrix.Run(ctx, &o.servers.Set, cells, opts)
	progress.clear()
	for _, sk := range res.Skipped {
		fmt.Fprintf(stderr, "lockbench matrix: %s\n", sk)
	}
	result.Matrix, result.Incomplete = res.Cells, ""
	ran := len(res.Cells) + len(res.Skipped)
	switch {
	case err != nil && len(res.Cells) == 0:
		return runErr(ctx, err)
	case err != nil:
		// The cells done are written, printed and judged all the same,
		// marked incomplete; then the cause decides the exit code.
		result.Incomplete = fmt.Sprintf("ended by an error after %d of %s: %s", ran, words.Count(len(cells), "cell"), plain(err))
		if ferr := finishMatrix(ctx, result, &o, stdout, stderr); isInfra(ferr) {
			return ferr
		}
		return runErr(ctx, err)
	case ctx.Err() != nil && ran < len(cells):
		result.Incomplete = fmt.Sprintf("interrupted after %d of %s", ran, words.Count(len(cells), "cell"))
	case ctx.Err() != nil:
		result.Incomplete = "interrupted during the last cell's sale"
	}
	if len(result.Matrix) == 0 && ctx.Err() == nil {
		return usageErr("no cell of the matrix can run on %s (%s)", o.servers.Names(), strings.Join(res.Skipped, "; "))
	}
	return finishMatrix(ctx, result, &o, stdout, stderr)
}

// isInfra reports whether err is an exit error of the infrastructure
// (exit 3): an output that could not be written.
func isInfra(err error) bool {
	var e *exitError
	return errors.As(err, &e) && e.code == exitInfra
}

// matrixErr is the usage error of a choice of cells that selects none.
func matrixErr(err error) error {
	switch {
	case errors.Is(err, matrix.ErrUnknownFault):
		return flagErr("faults", err)
	case errors.Is(err, matrix.ErrNoCell):
		return usageErr("--impl/--faults: %s", plain(err))
	}
	return err
}

// finishMatrix prints and writes the matrix (result.json, the report,
// JUnit), complete or not, and turns it into the exit code: 130 when
// interrupted, 1 when a cell differs from its expectation, 4 when none
// differs but one is inconclusive (it missed while the harness was
// saturated), 0 otherwise.
func finishMatrix(ctx context.Context, result *reports.Result, o *runOpts, stdout, stderr io.Writer) error {
	o.files.stderr = stderr
	if o.out != "" && o.files.write(filepath.Join(o.out, "result.json"), func(w io.Writer) error { return reports.WriteJSON(w, result) }) {
		writeRunReport(o.out, result, nil, &o.files)
	}
	if o.json {
		if err := reports.WriteJSON(stdout, result); err != nil {
			return err
		}
	} else {
		writeMatrix(stdout, result, o)
	}
	if o.gate.junit != "" {
		if err := writeMatrixJUnit(o.gate.junit, result); err != nil {
			return &exitError{code: exitInfra, err: fmt.Errorf("--junit: %w", err)}
		}
	}
	if err := o.files.err(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted after %s; the cells done are written", words.Count(len(result.Matrix), "cell"))}
	}
	if reports.Differing(result.Matrix) > 0 {
		return &exitError{code: exitFail}
	}
	if n := reports.InconclusiveCells(result.Matrix); n > 0 {
		return &exitError{code: exitInconclusive, err: fmt.Errorf("inconclusive: %s missed while the harness was saturated (see above); none differs", words.Count(n, "cell"))}
	}
	return nil
}

// writeMatrixJUnit writes one JUnit test case per cell, failed when the
// cell differs from the truth table, skipped when it is inconclusive.
func writeMatrixJUnit(path string, result *reports.Result) error {
	suite := reports.JUnitSuite{Name: "lockbench matrix"}
	for _, c := range result.Matrix {
		jc := reports.JUnitCase{
			Name:      c.Cell,
			ClassName: "lockbench.matrix." + c.Impl,
			Time:      time.Duration(c.Run.DurationMS * float64(time.Millisecond)),
		}
		switch {
		case c.Match:
		case c.Inconclusive:
			jc.Skipped = fmt.Sprintf("expected %s, %s in %s: %s", c.Expected, c.Measured, words.Count(max(1, c.Tries), "try", "tries"), reports.SaturationLine(&c.Run))
		default:
			jc.Failure = fmt.Sprintf("expected %s, measured %s\n%s", c.Expected, c.Measured, strings.Join(c.Run.Reasons, "\n"))
		}
		suite.Cases = append(suite.Cases, jc)
	}
	return atomicfile.Write(path, func(w io.Writer) error { return reports.WriteJUnit(w, suite) })
}

func writeMatrix(w io.Writer, result *reports.Result, o *runOpts) {
	writeWhere(w, result.Config)
	if o.sweep != nil {
		writeSweep(w, result.Matrix, *o.sweep)
	} else {
		writeGrid(w, reports.NewGrid(result.Matrix))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CELL\tEXPECTED\tMEASURED\tMATCH\tSOLD\tOVERSOLD\tOVERLAPS\tLINEARIZABLE\tFAULTS")
		for _, c := range result.Matrix {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d\t%d\t%s\t%d\n", c.Cell, c.Expected, c.Measured, matchMark(c),
				c.Run.Sold, c.Run.Stock, c.Run.Oversold, c.Run.Lock.Overlaps, c.Run.Linearizability.Status, len(c.Run.Faults))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\n%s\n", reports.IncompleteSummary(result.Matrix, result.Incomplete))
	for _, n := range o.notRun {
		fmt.Fprintf(w, "  %s\n", n)
	}
	for _, c := range result.Matrix {
		if !c.Match {
			fmt.Fprintf(w, "  %s: expected %s, measured %s; reproduce: %s\n", c.Cell, c.Expected, c.Measured, o.cellCommand(c))
			if load := reports.LoadLine(&c.Run); load != "" {
				fmt.Fprintf(w, "    %s\n", load)
			}
			if c.Inconclusive {
				fmt.Fprintf(w, "    %s (%s)\n", reports.SaturationLine(&c.Run), words.Count(max(1, c.Tries), "try", "tries"))
			}
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
				row = append(row, c.Mark())
			case c.Inconclusive:
				row = append(row, c.Mark()+reports.InconclusiveMark)
			default:
				row = append(row, c.Mark()+"!")
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		fmt.Fprint(w, strings.TrimRight(line, " \n"), strings.Repeat("\n", strings.Count(line, "\n")))
	}
	fmt.Fprintf(w, "  %s; !: differs from the truth table; %s\n\n", reports.MarkLegend, reports.InconclusiveLegend)
}

// matchMark says how a cell's measured verdict stands to its expected
// one: ok, DIFFERS, or inconclusive when it missed while the harness was
// saturated.
func matchMark(c reports.MatrixCell) string {
	switch {
	case c.Match:
		return "ok"
	case c.Inconclusive:
		return "inconclusive"
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
	fmt.Fprintln(tw, strings.Join(append(head, "BREAKS AT", "MATCH"), "\t"))
	for _, c := range cells {
		row := []string{c.Cell, c.Expected}
		breaks := "never"
		for _, p := range c.Sweep.Points {
			row = append(row, p.Mark())
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

// cellCommand is the run command that reproduces one cell: the cell's
// implementation, fault and workload (matrix.Cell.Flags), the servers,
// and every other flag the matrix was given (--hold, --attempts, --pool,
// the images...), by the builder of every reproduce line.
func (o *runOpts) cellCommand(c reports.MatrixCell) string {
	cell, _ := matrix.Lookup(c.Cell)
	cell.Impl = c.Impl
	// Under --sweep, c.Fault is the entry with the value the cell's run had.
	set := cell.Flags(o.workload(), c.Fault)
	switch o.backendKind {
	case backendRedis:
		set = append(set, [2]string{"redis", o.redis})
	case backendDocker:
		set = append(set, [2]string{"backend", "docker"}, [2]string{"redis-image", o.redisImage})
	case backendSentinel:
		set = append(set, [2]string{"backend", "sentinel"})
		if o.sentinelDocker {
			set = append(set, [2]string{"sentinel-docker", "true"}, [2]string{"redis-image", o.redisImage})
		}
	}
	for _, info := range servers.Kinds() {
		if v := o.addr(info.Kind); info.Flag != "" && !info.Secret && v != "" {
			set = append(set, [2]string{info.Flag, v})
		}
	}
	var needs servers.Needs
	if im, ok := harness.Lookup(c.Impl); ok {
		needs = im.Needs()
	}
	// The matrix's own flags, and the servers set above, are not the run's;
	// nor is its --faults, which chose cells: the cell's fault is in set
	// (a cell without one has none, and a run refuses --faults=none).
	return o.commandLine("", set, append([]string{"sweep", "junit", "backend", "redis", "redis-image", "faults"}, kindFlagNames(false)...), o.secretArgs(needs))
}
