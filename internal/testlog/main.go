// Command testlog runs go test with -json and prints what go test prints
// without -v (the failing tests' output and each package's closing line:
// ok, FAIL, "?  ... [no test files]"), then, at the end, every skipped test
// with its reason, so that a skip is never invisible. It exits with go
// test's exit code.
//
//	go run ./internal/testlog -count=1 -timeout 20m ./...
//
// The go command is $GO, or go.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// event is one line of go test -json (see go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// key names a test of a package; the package itself has no test.
type key struct{ pkg, test string }

// skip is one skipped test and its reason.
type skip struct {
	Package, Test, Reason string
}

// tally counts the tests that passed and failed, for the last line.
type tally struct{ passed, failed int }

// summary reads the events of go test -json from r and writes the output
// go test would print without -v to w; it returns the skipped tests in
// the order they ended, and counts the others in t.
func summary(r io.Reader, w io.Writer, t *tally) ([]skip, error) {
	buf := map[key][]string{}
	var skips []skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (the go command's own messages): as is.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output", "build-output":
			if e.Test == "" {
				if packageLine(e.Output) {
					fmt.Fprint(w, e.Output)
				}
				continue
			}
			if !strings.HasPrefix(e.Output, "=== ") { // -json's own progress lines
				buf[k] = append(buf[k], e.Output)
			}
		case "fail":
			if e.Test == "" {
				// Tests the package's failure cut short (a panic, a
				// timeout) have no end of their own: show what they said.
				flush(w, buf, e.Package)
				continue
			}
			t.failed++
			for _, s := range buf[k] {
				fmt.Fprint(w, s)
			}
			delete(buf, k)
		case "skip":
			if e.Test != "" {
				skips = append(skips, skip{e.Package, e.Test, reason(buf[k])})
			}
			delete(buf, k)
		case "pass":
			if e.Test != "" {
				t.passed++
			}
			delete(buf, k)
		}
	}
	return skips, sc.Err()
}

// packageLine reports whether a package's own line of output is one go
// test prints without -v: not the progress of its tests.
func packageLine(s string) bool {
	t := strings.TrimSpace(s)
	return t != "" && t != "PASS" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ")
}

// flush writes, in test order, the output of pkg's tests that have not
// ended.
func flush(w io.Writer, buf map[key][]string, pkg string) {
	var tests []string
	for k := range buf {
		if k.pkg == pkg {
			tests = append(tests, k.test)
		}
	}
	sort.Strings(tests)
	for _, t := range tests {
		k := key{pkg, t}
		for _, s := range buf[k] {
			fmt.Fprint(w, s)
		}
		delete(buf, k)
	}
}

// reason is what a skipped test logged, on one line: its t.Skip message
// (without the file:line prefix) and whatever it logged before it.
func reason(out []string) string {
	var parts []string
	for _, s := range out {
		t := strings.TrimSpace(s)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		if i := strings.Index(t, ": "); i > 0 && strings.Contains(t[:i], ".go:") {
			t = t[i+2:]
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}

// report writes the list of skipped tests, then the counts on a line of
// their own ("tests: N passed, N failed, N skipped"), the plain closing
// line any CI reader understands.
func report(w io.Writer, skips []skip, t tally) {
	defer fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped\n", t.passed, t.failed, len(skips))
	if len(skips) == 0 {
		fmt.Fprintln(w, "skipped: none")
		return
	}
	noun := "tests"
	if len(skips) == 1 {
		noun = "test"
	}
	fmt.Fprintf(w, "skipped: %d %s\n", len(skips), noun)
	for _, s := range skips {
		fmt.Fprintf(w, "  %s %s: %s\n", strings.TrimPrefix(s.Package, "github.com/lockbench/lockbench/"), s.Test, s.Reason)
	}
}

func main() {
	gocmd := os.Getenv("GO")
	if gocmd == "" {
		gocmd = "go"
	}
	cmd := exec.Command(gocmd, append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(2)
	}
	var t tally
	skips, serr := summary(out, os.Stdout, &t)
	if serr != nil {
		io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	report(os.Stdout, skips, t)
	if serr != nil {
		fmt.Fprintln(os.Stderr, "testlog:", serr)
	}
	if werr != nil {
		if x, ok := werr.(*exec.ExitError); ok {
			os.Exit(x.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "testlog:", werr)
		os.Exit(2)
	}
	if serr != nil {
		os.Exit(2)
	}
}
