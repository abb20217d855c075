package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockbench/lockbench/history"
)

// hostile is a fixture of testdata/hostile: a history edited as issue 24
// found them, in schema 2 (no digest) as the build of the time read them.
func hostile(name string) string {
	return filepath.Join("testdata", "hostile", name+".history.jsonl")
}

// TestCheckHostileHistories (issue 24, rows 6, 7 and 9): a history whose
// header or operations claim what no run has, or whose records were
// edited, is refused as bad usage (exit 2) naming what is wrong: never a
// hang, a panic or a verdict.
func TestCheckHostileHistories(t *testing.T) {
	checkUsage(t, []usageCase{
		// Row 6: once a loop without end in reports.bucketWidth.
		{[]string{"check", hostile("duration-maxint")}, "duration 9223372036854775807 is out of bounds"},
		{[]string{"check", hostile("end-maxint")}, "end 9223372036854775806 is beyond any run"},
		// Row 7: once makeslice: len out of range, and out of memory.
		{[]string{"check", hostile("items-maxint")}, "items 9223372036854775807 is out of bounds [0, 1000]"},
		{[]string{"check", hostile("items-1e8")}, "items 100000000 is out of bounds [0, 1000]"},
		// Row 9: a clock error added to a failing history made it pass.
		{[]string{"check", hostile("clock-claimed")}, "clock_error_ns 1000000 is larger than its run measured (0)"},
		{[]string{"check", "--clock-error=999us", hostile("clock-claimed")}, "give a clock error of at least 1ms"},
		// Row 9: the overlapping holder's line deleted, the trailer fixed.
		{[]string{"check", hostile("holder-deleted")}, "the header declares 8 buyers, the file holds 7 operations"},
		// Row 9: a sold-out line copied, the trailer fixed.
		{[]string{"check", hostile("sold-out-twice")}, "buyer 6's attempt 0 is recorded twice"},
	})
}

// TestCheckClockErrorGiven: a clock error the run did not measure is
// judged when the user gives it: the overlap it hides is then within the
// blind spot the summary names.
func TestCheckClockErrorGiven(t *testing.T) {
	code, out, errOut := lockbench(t, "check", hostile("overlap"))
	if code != exitFail || !strings.Contains(out, "mutual exclusion broken") {
		t.Fatalf("the overlap as recorded: exit %d, %s%s; want a failure", code, out, errOut)
	}
	code, out, errOut = lockbench(t, "check", "--clock-error=1ms", hostile("clock-claimed"))
	if code != exitPass || !strings.Contains(out, "clock error ±1.00ms") {
		t.Fatalf("with --clock-error=1ms: exit %d, %s%s; want a pass naming the blind spot", code, out, errOut)
	}
}

// TestCheckFIFO (issue 24, row 8): a FIFO named like a history is refused
// at once, never waited on.
func TestCheckFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "none.history.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	checkUsage(t, []usageCase{
		{[]string{"check", fifo}, "not a regular file"},
		{[]string{"check", dir}, "not a regular file"},
	})
}

// TestReportHostileResult (issue 24, rows 7 and 8): a result.json whose
// series was emptied once panicked `lockbench report`; it is bad usage
// naming the run. One naming histories out of its directory is drawn
// without them.
func TestReportHostileResult(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "reports", "htmlreport", "testdata", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, s := range map[string]string{
		"empty": strings.Replace(string(b), `"p50_ms": [`, `"p50_ms": [], "x": [`, 1),
		"null":  strings.Replace(string(b), `"p50_ms": [`, `"p50_ms": null, "x": [`, 1),
	} {
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := lockbench(t, "report", path, "-o", filepath.Join(dir, name+".html"))
		if code != exitUsage || !strings.Contains(errOut, "runs[0]") || !strings.Contains(errOut, "p50_ms") {
			t.Errorf("p50_ms %s: exit %d, %q; want exit 2 naming runs[0]'s p50_ms", name, code, errOut)
		}
	}
	s := strings.Replace(string(b), `"history": "histories/lua.jsonl"`, `"history": "/dev/zero"`, 1)
	s = strings.Replace(s, `"history": "histories/atomic.jsonl"`, `"history": "../../../../etc/passwd"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "result.json"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := lockbench(t, "report", dir, "-o", filepath.Join(dir, "report.html"))
	if code != exitPass {
		t.Fatalf("a result naming /dev/zero and ../: exit %d, %s", code, errOut)
	}
}

// TestSignedHistory: a run with --sign-key signs its histories; `check
// --sign-key` verifies them, and refuses them with another key, or the
// same history unsigned.
func TestSignedHistory(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "run.key")
	if err := os.WriteFile(keyFile, []byte("a key of the run, long enough\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "short.key"), []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCKBENCH_TEST_OTHER_KEY", "another key, as long as the first")
	out := filepath.Join(dir, "run")
	code, _, errOut := lockbench(t, "--impl=lua", "--clients=40", "--stock=10", "--ramp=100ms", "--out="+out, "--sign-key=file:"+keyFile)
	if code != exitPass {
		t.Fatalf("the signed run: exit %d, %s", code, errOut)
	}
	if code, _, errOut = lockbench(t, "check", out, "--sign-key="+keyFile); code != exitPass {
		t.Errorf("check with the run's key: exit %d, %s", code, errOut)
	}
	checkUsage(t, []usageCase{
		{[]string{"check", out, "--sign-key=env:LOCKBENCH_TEST_OTHER_KEY"}, "the signature does not match the key"},
		{[]string{"check", "../history/testdata/ok.jsonl", "--sign-key=" + keyFile}, "not signed"},
		{[]string{"check", out, "--sign-key=env:LOCKBENCH_TEST_NO_SUCH_KEY"}, "--sign-key: environment variable LOCKBENCH_TEST_NO_SUCH_KEY is not set"},
		{[]string{"check", out, "--sign-key=/dev/null"}, "--sign-key"},
		{[]string{"check", out, "--sign-key=file:" + filepath.Join(dir, "short.key")}, "--sign-key"},
		{[]string{"--impl=lua", "--sign-key=file:" + keyFile}, "give --out too"},
		{[]string{"matrix", "--sign-key=file:" + keyFile}, "give --out too"},
	})
}

// TestSignedMatrixHistory: a matrix with --sign-key signs its cells'
// histories as a run signs its own; `check --sign-key` verifies a cell's
// history, and refuses it edited, or rewritten with its digest mended but
// without the key.
func TestSignedMatrixHistory(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "ci.key")
	if err := os.WriteFile(keyFile, []byte("the matrix's key, long enough\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "matrix")
	code, stdout, errOut := lockbench(t, "matrix", "--impl=atomic", "--faults=none", "--seed=1", "--out="+out, "--sign-key=file:"+keyFile)
	if code != exitPass {
		t.Fatalf("the signed matrix: exit %d\n%s%s", code, stdout, errOut)
	}
	cell := filepath.Join(out, "atomic_none", "atomic.history.jsonl")
	if code, _, errOut := lockbench(t, "check", cell, "--sign-key=file:"+keyFile); code != exitPass {
		t.Fatalf("check of the cell's history with the matrix's key: exit %d, %s", code, errOut)
	}
	data, err := os.ReadFile(cell)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"outcome":"sold"`) {
		t.Fatalf("the cell sold nothing to edit:\n%s", data)
	}
	edited := filepath.Join(dir, "edited.history.jsonl")
	if err := os.WriteFile(edited, []byte(strings.Replace(string(data), `"outcome":"sold"`, `"outcome":"sold-out"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// What an editor can do without the key: the records read and written
	// again, their digest right, unsigned.
	h, err := history.ReadFile(cell)
	if err != nil {
		t.Fatal(err)
	}
	mended := filepath.Join(dir, "mended.history.jsonl")
	if err := history.WriteFile(mended, h); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, []usageCase{
		{[]string{"check", edited, "--sign-key=file:" + keyFile}, "the file was edited or corrupted"},
		{[]string{"check", mended, "--sign-key=file:" + keyFile}, "not signed"},
	})
}
