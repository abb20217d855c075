package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/reports"
)

// TestMatrixCommand runs one row of the matrix through the CLI: the table
// names expected and measured verdicts, result.json holds the cells, and
// --junit has one test case per cell.
func TestMatrixCommand(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	code, out, errOut := lockbench(t, "matrix", "--impl=atomic", "--seed=3", "--out="+dir, "--junit="+junit)
	if code != 0 {
		t.Fatalf("matrix --impl=atomic: exit %d, want 0 (every cell as expected)\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"atomic/none", "atomic/server-pause", "atomic/latency", "3 cells, 3 as expected, 0 differ"} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix output lacks %q:\n%s", want, out)
		}
	}
	res, err := reports.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matrix) != 3 || res.Matrix[1].Cell != "atomic/server-pause" || res.Matrix[1].Expected != "safe" ||
		!res.Matrix[1].Match || len(res.Matrix[1].Run.Faults) != 1 {
		t.Errorf("result.json matrix = %+v", res.Matrix)
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(x), "<testcase "); n != 3 || !strings.Contains(string(x), `name="atomic/server-pause"`) || strings.Contains(string(x), "<failure") {
		t.Errorf("junit has %d cases (want 3, none failed):\n%s", n, x)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `<tr class="row pass">`); !strings.Contains(string(page), "Truth table") || n != 3 {
		t.Errorf("report.html draws %d cells of the truth table, want 3", n)
	}
}
