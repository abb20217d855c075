package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
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
  lockbench check run1 --sign-key=file:ci.key    # refuse a history not signed with ci.key
  lockbench check run1 --clock-error=2ms         # accept a clock error the run did not measure
`

// checkCmd re-checks saved histories: the files given, or every
// *.history.jsonl in the directories given.
func checkCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("check", pflag.ContinueOnError)
	timeout := fs.Duration("check-timeout", checker.DefaultTimeout, "bound on the linearizability check")
	visualize := fs.String("visualize", "", "write porcupine's view of the first illegal segment to this HTML file; with several histories, a directory that gets IMPL.porcupine.html for each history found not linearizable")
	asJSON := fs.Bool("json", false, "print the result JSON instead of the table")
	verbose := fs.BoolP("verbose", "v", false, "say every note in full under the table (by default they are folded into one line per kind)")
	signKey := fs.String("sign-key", "", "verify each history's signature with this key, given as file:PATH or env:NAME (never the key itself); a history not signed with it is refused")
	clockError := fs.Duration("clock-error", 0, "accept a history whose header claims a clock error up to this, larger than its run measured")
	cpuprofile := fs.String("cpuprofile", "", "write a Go CPU profile of the check, reading included, to this file (go tool pprof)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: lockbench check [flags] HISTORY|DIR...\n\nRe-checks histories written by --out, offline.\n\nFlags:\n%s%s", fs.FlagUsages(), checkExamples)
			return nil
		}
		return usageErr("%v (see lockbench check --help)", err)
	}
	key, err := loadSignKey(*signKey)
	if err != nil {
		return flagErr("sign-key", err)
	}
	if *clockError < 0 {
		return usageErr("--clock-error must not be negative, got %v", *clockError)
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
	if *cpuprofile != "" {
		stop, err := startCPUProfile(*cpuprofile)
		if err != nil {
			return flagErr("cpuprofile", err)
		}
		defer stop()
	}
	opts := checker.Options{Timeout: *timeout}
	result := &reports.Result{Schema: reports.SchemaVersion, Version: buildVersion()}
	for _, f := range files {
		h, err := key.ReadFileHeld(f)
		if err == nil {
			err = history.CheckClock(h, int64(*clockError))
		}
		if err != nil {
			return usageErr("check: %s: %v", f, plainPath(err, f))
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

// startCPUProfile starts a CPU profile written to path; stop ends it
// and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
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

// plainPath is err's message without the path it starts with, which the
// caller names itself.
func plainPath(err error, path string) string {
	msg, _ := strings.CutPrefix(err.Error(), path+": ")
	return msg
}

// maxKeyFile bounds a key file read for --sign-key.
const maxKeyFile = 4096

// loadSignKey reads the key --sign-key names: file:PATH (or a bare PATH),
// the file's content, or env:NAME, the environment variable's, either
// without its trailing newline. The key itself is never given on the
// command line, where a process listing would show it. Empty gives no
// key.
func loadSignKey(spec string) (history.Key, error) {
	if spec == "" {
		return nil, nil
	}
	var b []byte
	if name, ok := strings.CutPrefix(spec, "env:"); ok {
		v, set := os.LookupEnv(name)
		if !set {
			return nil, fmt.Errorf("environment variable %s is not set", name)
		}
		b = []byte(v)
	} else {
		path := strings.TrimPrefix(spec, "file:")
		f, size, err := history.OpenRegular(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if size > maxKeyFile {
			return nil, fmt.Errorf("%s: %d bytes, a key file holds at most %d", path, size, maxKeyFile)
		}
		if b, err = io.ReadAll(io.LimitReader(f, maxKeyFile)); err != nil {
			return nil, err
		}
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) < history.MinKeyLen {
		return nil, fmt.Errorf("the key %s gives is %d bytes, at least %d are needed", spec, len(b), history.MinKeyLen)
	}
	return history.Key(b), nil
}
