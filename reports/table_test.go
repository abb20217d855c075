package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/golden"
)

func TestWriteTable(t *testing.T) {
	tests := []struct {
		name, golden string
		runs         []Run
	}{
		{"fixtures", "table.golden", fixtureRuns(t)},
		{"no runs", "table-empty.golden", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTable(&b, tt.runs); err != nil {
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
	if err := WriteTable(&b, runs); err != nil {
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
