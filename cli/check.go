package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/reports"
	"github.com/spf13/pflag"
)

const checkExamples = `
Examples:
  lockbench --impl=none,lua --out=run1 && lockbench check run1
  lockbench check run1/none.history.jsonl --visualize=none.html
  lockbench check run1 --visualize=run1-views    # one page per history found illegal
`

// checkCmd re-checks saved histories: the files given, or every
// *.history.jsonl in the directories given.
func checkCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("check", pflag.ContinueOnError)
	timeout := fs.Duration("check-timeout", checker.DefaultTimeout, "bound on the linearizability check")
	visualize := fs.String("visualize", "", "write porcupine's view of the first illegal segment to this HTML file; with several histories, a directory that gets IMPL.porcupine.html for each history found not linearizable")
	asJSON := fs.Bool("json", false, "print the result JSON instead of the table")
	verbose := fs.BoolP("verbose", "v", false, "say every note in full under the table (by default they are folded into one line per kind)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: lockbench check [flags] HISTORY|DIR...\n\nRe-checks histories written by --out, offline.\n\nFlags:\n%s%s", fs.FlagUsages(), checkExamples)
			return nil
		}
		return usageErr("%v (see lockbench check --help)", err)
	}
	var files []string
	for _, a := range fs.Args() {
		st, err := os.Stat(a)
		if err != nil {
			return usageErr("check: %v", err)
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		found, _ := filepath.Glob(filepath.Join(a, "*.history.jsonl"))
		if len(found) == 0 {
			return usageErr("check: no *.history.jsonl in %s", a)
		}
		files = append(files, found...)
	}
	if len(files) == 0 {
		return usageErr("check: give history files or directories (see lockbench check --help)")
	}
	// One history: --visualize is a file; several: a directory.
	vizPath := func(string) string { return *visualize }
	if *visualize != "" && len(files) > 1 {
		if st, err := os.Stat(*visualize); err == nil && !st.IsDir() {
			return usageErr("--visualize: %s is a file; with %d histories it names a directory", *visualize, len(files))
		}
		if err := os.MkdirAll(*visualize, 0o755); err != nil {
			return flagErr("visualize", err)
		}
		vizPath = func(f string) string {
			return filepath.Join(*visualize, strings.TrimSuffix(filepath.Base(f), ".history.jsonl")+".porcupine.html")
		}
	}
	opts := checker.Options{Timeout: *timeout}
	result := &reports.Result{Schema: reports.SchemaVersion, Version: buildVersion()}
	for _, f := range files {
		h, err := history.ReadFile(f)
		if err != nil {
			return usageErr("check: %v", err)
		}
		run := reports.NewRun(h, checker.Check(h, opts))
		run.History = f
		result.Runs = append(result.Runs, run)
		if *visualize != "" && (len(files) == 1 || run.Linearizability.Status == checker.Illegal) {
			if err := writeVisualization(vizPath(f), h, opts); err != nil {
				fmt.Fprintln(stderr, "lockbench: --visualize:", err)
			} else {
				fmt.Fprintf(stderr, "lockbench: wrote %s\n", vizPath(f))
			}
		}
	}
	return finish(context.Background(), result, "", *asJSON, detailOf(*verbose), stdout)
}

func writeVisualization(path string, h *history.History, opts checker.Options) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := checker.Visualize(f, h, opts); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
