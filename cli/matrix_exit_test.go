package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/reports"
)

// TestMatrixExitAndJUnit: a differing cell makes the matrix exit 1 and
// fails its JUnit case; an inconclusive one (missed while the harness
// was saturated) is a skipped case and exit 4 when none differs;
// interrupted, the cells done are written all the same, then exit 130.
func TestMatrixExitAndJUnit(t *testing.T) {
	ok := reports.MatrixCell{Cell: "lua/none", Impl: "lua", Expected: "safe", Measured: "safe", Match: true}
	differs := reports.MatrixCell{Cell: "lua/expire", Impl: "lua", Expected: "overlap", Measured: "safe"}
	inconclusive := reports.MatrixCell{Cell: "lua/crash-holder", Impl: "lua", Expected: "safe", Measured: reports.InconclusiveMeasured, Inconclusive: true, Tries: 3}
	inconclusive.Run.Saturation = []string{"lockbench stood still for 700ms at once"}
	tests := []struct {
		name        string
		cells       []reports.MatrixCell
		interrupted bool
		code        int
		failures    int
		skipped     int
	}{
		{"as expected", []reports.MatrixCell{ok}, false, exitPass, 0, 0},
		{"one differs", []reports.MatrixCell{ok, differs}, false, exitFail, 1, 0},
		{"one inconclusive", []reports.MatrixCell{ok, inconclusive}, false, exitInconclusive, 0, 1},
		{"a difference outweighs an inconclusive cell", []reports.MatrixCell{differs, inconclusive}, false, exitFail, 1, 1},
		{"interrupted", []reports.MatrixCell{ok, differs}, true, exitInterrupted, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := runOpts{}
			o.gate.junit = filepath.Join(dir, "junit.xml")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.interrupted {
				cancel()
			}
			result := &reports.Result{Schema: reports.SchemaVersion, Matrix: tt.cells}
			code := exitCode(finishMatrix(ctx, result, &o, io.Discard, io.Discard), io.Discard)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			x, err := os.ReadFile(o.gate.junit)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(x), "<failure"); n != tt.failures {
				t.Errorf("junit has %d failures, want %d:\n%s", n, tt.failures, x)
			}
			if n := strings.Count(string(x), "<skipped"); n != tt.skipped {
				t.Errorf("junit has %d skipped cases, want %d:\n%s", n, tt.skipped, x)
			}
		})
	}
}
