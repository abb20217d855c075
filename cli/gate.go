package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/reports"
	"github.com/spf13/pflag"
)

// gateOpts are the run flags of the regression gate (--baseline, the
// thresholds, --junit) and of --repeat; gateFlags registers them.
type gateOpts struct {
	baseline string
	junit    string
	repeat   int
	th       reports.Thresholds

	// base is the baseline result, read before the sale starts.
	base *reports.Result
	// started counts the repetitions begun per implementation.
	started map[string]int
}

// maxRepeat bounds --repeat: beyond it a gate costs more than it steadies.
const maxRepeat = 100

const gateExamples = `
  # CI gate: median of 3 repetitions against a committed baseline, JUnit for the CI system
  lockbench --impl=watchdog --repeat=3 --baseline=ci/baseline.json --junit=junit.xml --out=report
`

// gateFlags registers the gate's flags on the run command's flag set.
func gateFlags(fs *pflag.FlagSet, g *gateOpts) {
	d := reports.DefaultThresholds
	fs.StringVar(&g.baseline, "baseline", "", "compare with this saved result.json (or its directory); a regression past the thresholds below fails the run (exit 1)")
	fs.Float64Var(&g.th.MaxP99Ratio, "max-p99-ratio", d.MaxP99Ratio, "with --baseline: largest purchase p99 latency ratio, this run over the baseline, that passes")
	fs.Float64Var(&g.th.MinThroughputRatio, "min-throughput-ratio", d.MinThroughputRatio, "with --baseline: smallest sales/s ratio, this run over the baseline, that passes")
	fs.Float64Var(&g.th.MaxCommandsRatio, "max-commands-ratio", d.MaxCommandsRatio, "with --baseline: largest commands-per-sale ratio, this run over the baseline, that passes")
	fs.StringVar(&g.junit, "junit", "", "write a JUnit XML report to this file: one test case per implementation, failed by its regressions or its checks")
	fs.IntVar(&g.repeat, "repeat", 1, "run each implementation this many times and keep the medians; any failing repetition fails")
}

// prepare checks the gate's flags and reads the baseline, so that a
// mistake is reported before the sale rather than after it. A baseline
// with no run of any of impls (another selection, or a matrix's result)
// would compare nothing and pass every regression: it is refused.
func (g *gateOpts) prepare(fs *pflag.FlagSet, impls []harness.Impl) error {
	switch {
	case g.repeat < 1 || g.repeat > maxRepeat:
		return usageErr("--repeat must be between 1 and %d, got %d", maxRepeat, g.repeat)
	case g.th.MaxP99Ratio <= 0:
		return usageErr("--max-p99-ratio must be positive, got %g", g.th.MaxP99Ratio)
	case g.th.MinThroughputRatio <= 0:
		return usageErr("--min-throughput-ratio must be positive, got %g", g.th.MinThroughputRatio)
	case g.th.MaxCommandsRatio <= 0:
		return usageErr("--max-commands-ratio must be positive, got %g", g.th.MaxCommandsRatio)
	}
	if g.baseline == "" {
		for _, name := range []string{"max-p99-ratio", "min-throughput-ratio", "max-commands-ratio"} {
			if fs.Changed(name) {
				return usageErr("--%s applies with --baseline: give the result to compare with", name)
			}
		}
		return nil
	}
	path := g.baseline
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "result.json")
	}
	base, err := reports.ReadFile(path)
	if err != nil {
		return flagErr("baseline", err)
	}
	if !sharesImpl(base, impls) {
		var have []string
		for _, r := range base.Runs {
			have = append(have, r.Impl)
		}
		return usageErr("--baseline: %s has no run of the implementations under test, so nothing would be compared (it has: %s)", path, cmp.Or(strings.Join(have, ", "), "no runs"))
	}
	g.base = base
	g.baseline = path
	return nil
}

// sharesImpl reports whether base has a run of one of impls.
func sharesImpl(base *reports.Result, impls []harness.Impl) bool {
	for _, r := range base.Runs {
		for _, im := range impls {
			if r.Impl == im.Name {
				return true
			}
		}
	}
	return false
}

// schedule lists the runs to make: each implementation --repeat times in
// a row, so that its repetitions fold into one Run.
func (g *gateOpts) schedule(impls []harness.Impl) []harness.Impl {
	out := make([]harness.Impl, 0, len(impls)*max(g.repeat, 1))
	for _, im := range impls {
		for range max(g.repeat, 1) {
			out = append(out, im)
		}
	}
	return out
}

// historyName names the history file of the next repetition of impl:
// IMPL.history.jsonl, or IMPL.repK.history.jsonl under --repeat.
func (g *gateOpts) historyName(impl string) string {
	if g.started == nil {
		g.started = map[string]int{}
	}
	g.started[impl]++
	if g.repeat <= 1 {
		return impl + ".history.jsonl"
	}
	return fmt.Sprintf("%s.rep%d.history.jsonl", impl, g.started[impl])
}

// combine folds each implementation's consecutive repetitions into one
// Run of medians (reports.CombineRepetitions).
func (g *gateOpts) combine(runs []reports.Run) []reports.Run {
	if g.repeat <= 1 {
		return runs
	}
	var out []reports.Run
	for i := 0; i < len(runs); {
		j := i + 1
		for j < len(runs) && j-i < g.repeat && runs[j].Impl == runs[i].Impl {
			j++
		}
		out = append(out, reports.CombineRepetitions(runs[i:j]))
		i = j
	}
	return out
}

// finishRun ends `lockbench run`: it folds repetitions, writes porcupine's
// view of each illegal history, then does what finish does (result.json,
// the summary, the verdicts' exit code), and after it writes report.html,
// judges the gate and writes the JUnit report. A regression fails the run
// with exit 1; an interrupt keeps exit 130 and skips the gate.
func finishRun(ctx context.Context, o *runOpts, result *reports.Result, stdout, stderr io.Writer) error {
	g := &o.gate
	result.Runs = g.combine(result.Runs)
	if g.repeat > 1 {
		if result.Config.Extra == nil {
			result.Config.Extra = map[string]string{}
		}
		result.Config.Extra["repeat"] = strconv.Itoa(g.repeat)
	}
	if o.out != "" && o.files.failed == nil {
		writeVisualizations(o.out, result, o.held, o.checkTimeout, stderr)
	}
	// The summary first, then the files (o.files): a file that cannot be
	// written leaves the verdicts printed.
	err := finish(ctx, result, "", o.json, detailOf(o.verbose), stdout)
	var ee *exitError
	if err != nil && (!errors.As(err, &ee) || ee.code == exitInfra || ee.code == exitUsage) {
		return err
	}
	if o.out != "" {
		if o.files.write(filepath.Join(o.out, "result.json"), func(w io.Writer) error { return reports.WriteJSON(w, result) }) {
			writeRunReport(o.out, result, o.held, &o.files)
		}
	}
	if ctx.Err() != nil {
		return cmp.Or(o.files.err(), err)
	}
	gate := reports.Gate(g.base, result, g.th)
	if g.junit != "" {
		o.files.write(g.junit, func(w io.Writer) error { return writeJUnit(w, result, gate) })
	}
	if ferr := o.files.err(); ferr != nil && (err == nil || errors.As(err, &ee) && ee.code != exitFail) {
		// Files lost: exit 3, unless a check failed (exit 1), which
		// says more; the message is on stderr either way.
		if g.base != nil {
			printGate(stdout, g.baseline, gate)
		}
		return ferr
	}
	if g.base != nil {
		w := stdout
		if o.json {
			w = stderr
		}
		printGate(w, g.baseline, gate)
	}
	switch {
	case len(gate.Regressions) > 0 && (err == nil || errors.As(err, &ee) && ee.code == exitInconclusive):
		return &exitError{code: exitFail}
	case !gate.Pass() && err == nil:
		// Nothing regressed, and nothing could be compared: a gate
		// that compared nothing has not passed.
		return &exitError{code: exitInconclusive}
	}
	return err
}

// printGate writes the gate's verdict: what regressed and by how much.
func printGate(w io.Writer, baseline string, g reports.GateReport) {
	switch {
	case g.Pass():
		fmt.Fprintf(w, "\ngate: pass against %s\n", baseline)
	case len(g.Regressions) == 0:
		fmt.Fprintf(w, "\ngate: not compared against %s: %s\n", baseline, g.Uncompared)
	default:
		n := len(g.Regressions)
		s := "s"
		if n == 1 {
			s = ""
		}
		fmt.Fprintf(w, "\ngate: FAIL against %s: %d regression%s\n", baseline, n, s)
		for _, r := range g.Regressions {
			fmt.Fprintf(w, "  %s\n", r)
		}
		if g.Uncompared != "" {
			fmt.Fprintf(w, "  note: %s\n", g.Uncompared)
		}
	}
	for _, n := range g.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// writeJUnit writes the JUnit report of result judged by g to w.
func writeJUnit(w io.Writer, result *reports.Result, g reports.GateReport) error {
	return reports.WriteJUnit(w, reports.JUnitSuite{Name: "lockbench run", Cases: reports.GateCases(result, g)})
}
