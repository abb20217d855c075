package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/golden"
)

func TestWriteTable(t *testing.T) {
	tests := []struct {
		name, golden string
		runs         []Run
		detail       Detail
	}{
		{"fixtures", "table.golden", fixtureRuns(t), Full},
		{"no runs", "table-empty.golden", nil, Full},
		{"saturated", "table-saturated.golden", saturatedRuns(t), Full},
		// Brief: the fairness notes of three runs on one line, a note
		// two runs share said once, a note of one run whole.
		{"brief", "table-brief.golden", notedRuns(t), Brief},
		{"brief's full", "table-brief-full.golden", notedRuns(t), Full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTable(&b, tt.runs, tt.detail); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tt.golden, b.Bytes())
		})
	}
}

func TestWriteTableReasons(t *testing.T) {
	runs := fixtureRuns(t)
	// A passing run's reasons are not printed even if present; a failing
	// run's are, each on its own line under the run's name.
	runs[0].Reasons = []string{"should not show"}
	var b bytes.Buffer
	if err := WriteTable(&b, runs, Full); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "should not show") {
		t.Errorf("a passing run's reasons were printed:\n%s", out)
	}
	for _, r := range runs[1].Reasons {
		if !strings.Contains(out, "\n  set-nx-ex: "+r+"\n") {
			t.Errorf("reason %q missing:\n%s", r, out)
		}
	}
}

// notedRuns are the fixture's runs with the notes a run of three locks
// has: a fairness note each, a note two share, one of one run alone.
func notedRuns(t *testing.T) []Run {
	runs := fixtureRuns(t)
	shared := "1 write had an unknown outcome; the check let each land at any later time or never"
	runs[0].Notes = []string{
		"fairness: 404,230 overtakes (a buyer who asked for the lock later got it before one who asked 10ms or more earlier; first: buyer 47 asked at 0.013s and got it at 0.254s, while buyer 5, asking at 0.002s, waited until 0.623s)",
		shared,
	}
	runs[1].Notes = []string{
		"fairness: no overtakes: every buyer got the lock in the order it asked for it (asks closer than 10ms apart aside)",
		"2 releases found the lock gone: those holders had no mutual exclusion for part of their critical section",
		shared,
	}
	runs[2].Notes = []string{"fairness: 12 overtakes (a buyer who asked for the lock later got it before one who asked 10ms or more earlier; first: buyer 1 asked at 0.001s and got it at 0.002s, while buyer 0, asking at 0.000s, waited until 0.003s)"}
	return runs
}

// saturatedRuns are the fixture's runs with lua inconclusive, its harness
// saturated and liveness unjudged, and atomic live on a saturated harness.
func saturatedRuns(t *testing.T) []Run {
	runs := fixtureRuns(t)
	runs[0].Verdict = Inconclusive
	runs[0].Saturation = []string{"the kernel kept lockbench waiting for a CPU 94% of the time it was ready to run (bound 50%): the machine is busier than its 2 cores"}
	runs[0].Unjudged = []string{"3 buyers were sent away after waiting 30s for the lock"}
	runs[2].Saturation = []string{"lockbench stood still for 682ms at once, a third of the 1.5s lease or more (bound 500ms)"}
	return runs
}

// TestWriteTableInconclusive: an inconclusive run reads INCONCLUSIVE in
// the VERDICT column, and each saturated run has its one line saying so.
func TestWriteTableInconclusive(t *testing.T) {
	runs := saturatedRuns(t)
	var b bytes.Buffer
	if err := WriteTable(&b, runs, Full); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	if f := strings.Fields(lines[1]); len(f) < 2 || f[0] != "lua" || f[1] != "INCONCLUSIVE" {
		t.Errorf("lua's row %q, want its verdict INCONCLUSIVE", lines[1])
	}
	for _, i := range []int{0, 2} {
		want := "\n  " + runs[i].Impl + ": " + SaturationLine(&runs[i]) + "\n"
		if !strings.Contains(out, want) {
			t.Errorf("%s's saturation line missing:\n%s", runs[i].Impl, out)
		}
	}
	if !strings.Contains(SaturationLine(&runs[0]), "liveness not judged (3 buyers") || !strings.Contains(SaturationLine(&runs[2]), "liveness held all the same") {
		t.Errorf("saturation lines %q, %q", SaturationLine(&runs[0]), SaturationLine(&runs[2]))
	}
}

func TestFormatMicros(t *testing.T) {
	tests := []struct {
		us   int64
		want string
	}{
		{0, "0µs"},
		{1, "1µs"},
		{999, "999µs"},
		{1000, "1.00ms"},
		{1234, "1.23ms"},
		{9996, "10.0ms"},
		{12345, "12.3ms"},
		{123456, "123ms"},
		{999_499, "999ms"},
		{999_500, "1.00s"},
		{3_200_000, "3.20s"},
		{99_960_000, "100s"},
		{3_600_000_000, "3600s"},
	}
	for _, tt := range tests {
		if got := FormatMicros(tt.us); got != tt.want {
			t.Errorf("FormatMicros(%d) = %q, want %q", tt.us, got, tt.want)
		}
	}
}

// TestLoadLine: a run's health says what the machine was doing; a run
// without it says nothing.
func TestLoadLine(t *testing.T) {
	r := fixtureRuns(t)[0]
	if got := LoadLine(&r); got != "" {
		t.Errorf("no health: %q, want nothing", got)
	}
	r.Health = &history.Health{Cores: 2, Others: 2.5, CPUWait: 0.47, StallMax: 21_500_000}
	want := "it ran beside 2.5 other tasks ready to run on the machine's 2 cores, lockbench waiting for a CPU 47% of the time it was ready, its longest stall 21.5ms"
	if got := LoadLine(&r); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
