package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOutputsCheckedBeforeTheSale: an --out or --junit that cannot be
// written is refused before any buyer arrives (exit 2 naming the flag),
// not after a sale of minutes.
func TestOutputsCheckedBeforeTheSale(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, []usageCase{
		{[]string{"--impl=atomic", "--clients=10", "--out=" + filepath.Join(file, "sub")}, "--out"},
		{[]string{"--impl=atomic", "--clients=10", "--junit=" + filepath.Join(dir, "missing", "junit.xml")}, "--junit"},
		{[]string{"--impl=atomic", "--clients=10", "--junit=" + dir}, "--junit"},
		{[]string{"matrix", "--impl=none", "--faults=none", "--out=" + filepath.Join(file, "sub")}, "--out"},
	})
}

// TestReportOutputChecked: a report -o that cannot be written is refused
// before the results are rendered, as a usage error naming -o (exit 2),
// not "report: open ..." (exit 3); one that can is written.
func TestReportOutputChecked(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	result := filepath.Join("testdata", "baseline-fast.json")
	cases := []usageCase{
		{[]string{"report", result, "-o", filepath.Join(dir, "missing", "x.html")}, "-o: directory"},
		{[]string{"report", result, "-o", filepath.Join(file, "x.html")}, "-o: directory"},
		{[]string{"report", result, "-o", dir}, "-o: " + dir + " is a directory"},
	}
	if os.Geteuid() != 0 { // root writes through any mode
		ro := filepath.Join(dir, "read-only.html")
		if err := os.WriteFile(ro, nil, 0o444); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, usageCase{[]string{"report", result, "-o", ro}, "-o: " + ro + " is not writable"})
	}
	checkUsage(t, cases)

	out := filepath.Join(dir, "report.html")
	if code, _, errOut := lockbench(t, "report", result, "-o", out); code != exitPass {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Errorf("report not written: %v", err)
	}
}

// TestOutReused: a second run into the same --out keeps none of the
// first run's histories, so `lockbench check DIR` judges the second run
// alone; files lockbench did not write stay.
func TestOutReused(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	// none oversells in most runs, not every one (its race needs two
	// buyers between a read and a write): either verdict will do here,
	// what matters is the files it leaves.
	if code, _, errOut := lockbench(t, "--impl=none", "--clients=400", "--stock=100", "--out="+dir, "--seed=1"); code != exitFail && code != exitPass {
		t.Fatalf("first run: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.history.jsonl")); err != nil {
		t.Fatalf("the first run left no history: %v", err)
	}
	if code, _, errOut := lockbench(t, "--impl=atomic", "--clients=400", "--stock=100", "--out="+dir, "--seed=1"); code != exitPass {
		t.Fatalf("second run: exit %d: %s", code, errOut)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, want := range []string{"atomic.history.jsonl", "notes.txt", "result.json", "report.html"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s missing from %v", want, names)
		}
	}
	if slices.Contains(names, "none.history.jsonl") || slices.Contains(names, "none.porcupine.html") {
		t.Errorf("the first run's files are still there: %v", names)
	}
	if code, out, errOut := lockbench(t, "check", dir); code != exitPass {
		t.Errorf("check of the reused directory: exit %d:\n%s%s", code, out, errOut)
	}
}

// TestCheckVisualizeDir: check of a directory with --visualize writes
// porcupine's page for each history found not linearizable into the
// directory --visualize names; report refuses a history, naming what it
// takes instead.
func TestCheckVisualizeDir(t *testing.T) {
	dir := t.TempDir()
	// A planted oversell: none's race is not certain in a small sale, so
	// the history is one of the checker's illegal fixtures.
	for _, name := range []string{"bad-oversell", "ok-sequential"} {
		b, err := os.ReadFile(filepath.Join("..", "checker", "testdata", name+".jsonl"))
		if err != nil {
			t.Fatalf("fixture %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".history.jsonl"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	views := filepath.Join(t.TempDir(), "views")
	if code, _, errOut := lockbench(t, "check", dir, "--visualize="+views); code != exitFail {
		t.Fatalf("check: exit %d, want %d: %s", code, exitFail, errOut)
	}
	entries, err := os.ReadDir(views)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"bad-oversell.porcupine.html"}) {
		t.Errorf("--visualize wrote %v, want the illegal history's page only", names)
	}
	checkUsage(t, []usageCase{
		{[]string{"report", filepath.Join(dir, "bad-oversell.history.jsonl")}, "is a history, not a result"},
		{[]string{"check", dir, "--visualize=" + filepath.Join(dir, "bad-oversell.history.jsonl")}, "--visualize"},
	})
}
