package reports

import (
	"bytes"
	"strings"
	"testing"
)

// TestClockErrorReported: a run whose nodes' clocks had an error carries
// it as clock_error_ns in result.json and one line of the summary; a run
// on one clock has neither, so that the goldens stay as they were.
func TestClockErrorReported(t *testing.T) {
	tests := []struct {
		name string
		eps  int64
		key  string // in result.json; "" for none
		line string // in the summary; "" for none
	}{
		{"one clock", 0, "", ""},
		{"nodes' clocks", 1_200_000, `"clock_error_ns": 1200000`, "\n  lua: clock error ±1.20ms: overlaps shorter than 2.40ms cannot be seen\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := loadHistory(t, "lua")
			h.Header.ClockError = tt.eps
			rep := fixtureReports["lua"]
			rep.ClockError = tt.eps
			run := NewRun(h, rep)
			if run.ClockError != tt.eps {
				t.Fatalf("run's ClockError %d, want the report's %d", run.ClockError, tt.eps)
			}
			res := fixtureResult(t)
			res.Runs = []Run{run}

			var js bytes.Buffer
			if err := WriteJSON(&js, res); err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(js.String(), "clock_error_ns"); has != (tt.key != "") || !strings.Contains(js.String(), tt.key) {
				t.Errorf("result.json should hold %q:\n%s", tt.key, js.String())
			}
			back, err := ReadJSON(&js)
			if err != nil {
				t.Fatal(err)
			}
			if back.Runs[0].ClockError != tt.eps {
				t.Errorf("read back ClockError %d, want %d", back.Runs[0].ClockError, tt.eps)
			}

			var table bytes.Buffer
			if err := WriteTable(&table, res.Runs, Full); err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(table.String(), "clock error"); has != (tt.line != "") || !strings.Contains(table.String(), tt.line) {
				t.Errorf("summary should hold %q:\n%s", tt.line, table.String())
			}
		})
	}
}

func TestBlindSpot(t *testing.T) {
	tests := []struct {
		ns   int64
		want string
	}{
		{300, "clock error ±1µs: overlaps shorter than 1µs cannot be seen"},
		{250_000, "clock error ±250µs: overlaps shorter than 500µs cannot be seen"},
		{1_200_000, "clock error ±1.20ms: overlaps shorter than 2.40ms cannot be seen"},
		{750_000_000, "clock error ±750ms: overlaps shorter than 1.50s cannot be seen"},
	}
	for _, tt := range tests {
		if got := BlindSpot(tt.ns); got != tt.want {
			t.Errorf("BlindSpot(%d) = %q, want %q", tt.ns, got, tt.want)
		}
	}
}
