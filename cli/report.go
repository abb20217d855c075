package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/reports/htmlreport"
	"github.com/spf13/pflag"
)

const reportExamples = `
Examples:
  # rebuild a run's report from its result.json and the histories beside it
  lockbench report run1 -o run1/report.html

  # compare runs side by side: p50, p99, sales/s, commands per sale and
  # verdicts, with changes against the first
  lockbench report base/result.json run2/result.json -o compare.html
`

// reportOpts are the flags of `lockbench report`.
type reportOpts struct {
	output string
	title  string
}

// reportCmd writes the HTML report of saved results, offline: one result
// gives its full report, several a comparison followed by each report.
func reportCmd(args []string, stdout, stderr io.Writer) error {
	var o reportOpts
	fs := pflag.NewFlagSet("report", pflag.ContinueOnError)
	fs.StringVarP(&o.output, "output", "o", "report.html", "HTML file to write")
	fs.StringVar(&o.title, "title", "", `page title (default "lockbench report", or "lockbench comparison" for several results)`)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: lockbench report [flags] RESULT|DIR...\n\nWrites one self-contained HTML report of saved results (result.json, or a directory\nwritten by --out), offline; with several, compares them side by side. Exits 0 when\nthe report is written, whatever the verdicts.\n\nFlags:\n%s%s", fs.FlagUsages(), reportExamples)
			return nil
		}
		return usageErr("%v (see lockbench report --help)", err)
	}
	if fs.NArg() == 0 {
		return usageErr("report: give result.json files or the directories holding them (see lockbench report --help)")
	}
	// Checked before the results are loaded and rendered: a path that
	// cannot be written is the user's to fix (exit 2), not a failure of
	// the machine (exit 3).
	if err := writableFile("-o", o.output, "report.html"); err != nil {
		return err
	}
	var sources []*htmlreport.Source
	for _, a := range fs.Args() {
		if strings.HasSuffix(a, ".history.jsonl") {
			return usageErr("report: %s is a history, not a result: give the result.json beside it or its directory (%s); `lockbench check %s` re-checks the history", a, filepath.Dir(a), a)
		}
		src, err := htmlreport.LoadSource(a)
		if err != nil {
			return usageErr("report: %v", err)
		}
		for i, why := range src.Missing {
			if why != "" && src.Result.Runs[i].Lock.Overlaps > 0 {
				fmt.Fprintf(stderr, "lockbench: note: %s: %s: %s; its lock timelines show the overlapping pair only\n", a, src.Result.Runs[i].Impl, why)
			}
		}
		sources = append(sources, src)
	}
	title := o.title
	if title == "" && len(sources) > 1 {
		title = "lockbench comparison"
	}
	if err := htmlreport.WriteFile(o.output, htmlreport.Options{Title: title}, sources...); err != nil {
		return &exitError{code: exitInfra, err: fmt.Errorf("report: %w", err)}
	}
	fmt.Fprintf(stdout, "wrote %s\n", o.output)
	return nil
}

// writeRunReport writes dir/report.html, the report of result, saved in
// dir, through files (whole or not at all), and says where on stderr. The
// histories of held (by the name each run recorded) are drawn from
// memory; only the others are read from dir.
func writeRunReport(dir string, result *reports.Result, held map[string]*history.History, files *outFiles) {
	path := filepath.Join(dir, "report.html")
	// The source's runs are a copy: drawing drops a missing view's link.
	res := *result
	res.Runs = slices.Clone(result.Runs)
	src := htmlreport.HeldSource(dir, &res, held)
	if files.write(path, func(w io.Writer) error { return htmlreport.Write(w, htmlreport.Options{}, src) }) {
		fmt.Fprintf(files.stderr, "report: %s\n", path)
	}
}

// writeVisualizations writes porcupine's view of the first illegal
// segment of each run whose inventory history is not linearizable, next
// to its history in dir, and records it in the run. A view that cannot be
// drawn is reported on stderr and left out: the verdict stands without it.
//
// The histories of held are taken from memory, the others read from dir.
func writeVisualizations(dir string, result *reports.Result, held map[string]*history.History, timeout time.Duration, stderr io.Writer) {
	for i := range result.Runs {
		r := &result.Runs[i]
		if r.Linearizability.Status != checker.Illegal || r.History == "" {
			continue
		}
		h, err := held[r.History], error(nil)
		if h == nil {
			h, err = history.Key(nil).ReadFileIn(dir, r.History)
		}
		if err == nil {
			// lua.history.jsonl gives lua.porcupine.html; lua.rep2.history.jsonl
			// lua.rep2.porcupine.html.
			name := strings.TrimSuffix(filepath.Base(r.History), ".history.jsonl") + ".porcupine.html"
			err = writeVisualization(filepath.Join(dir, name), h, checker.Options{Timeout: timeout})
			if err == nil {
				r.Visualization = name
				continue
			}
		}
		fmt.Fprintf(stderr, "lockbench: %s: porcupine's view not written: %v\n", r.Impl, err)
	}
}
