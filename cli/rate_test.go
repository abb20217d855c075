package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/matrix"
)

// TestRateFlag: --rate reads buyers per second or per minute, and writes
// back what was given, with its unit, for the reproduce line.
func TestRateFlag(t *testing.T) {
	tests := []struct {
		in        string
		perSecond float64
		text      string
	}{
		{"500/s", 500, "500/s"},
		{"500", 500, "500/s"},
		{"30000/m", 500, "30000/m"},
		{"0.5/s", 0.5, "0.5/s"},
		{"7200/h", 2, "7200/h"},
		{" 250 / s ", 250, "250/s"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var r rateFlag
			if err := r.Set(tt.in); err != nil {
				t.Fatalf("Set(%q): %v", tt.in, err)
			}
			if r.perSecond != tt.perSecond || r.String() != tt.text {
				t.Errorf("Set(%q) = %v a second, written %q; want %v, %q", tt.in, r.perSecond, r.String(), tt.perSecond, tt.text)
			}
		})
	}
}

// TestRateUsage: a rate that is not one, a rate beside an explicit ramp,
// and a rate too slow to bring every buyer before --timeout are usage
// errors that name the flags.
func TestRateUsage(t *testing.T) {
	checkUsage(t, []usageCase{
		{[]string{"--rate=0"}, "--rate"},
		{[]string{"--rate=0/s"}, "positive"},
		{[]string{"--rate=-5/s"}, "--rate"},
		{[]string{"--rate=NaN"}, "--rate"},
		{[]string{"--rate=Inf/s"}, "--rate"},
		{[]string{"--rate=fast"}, "not a rate"},
		{[]string{"--rate=5/d"}, "not a rate"},
		{[]string{"--rate=500/s", "--ramp=2s"}, "--rate and --ramp"},
		{[]string{"--ramp=2s", "--rate=500"}, "--rate and --ramp"},
		{[]string{"--rate=1/s", "--clients=1000", "--timeout=1m"}, "--timeout=1m0s"},
		{[]string{"matrix", "--rate=500/s", "--ramp=1s"}, "--rate and --ramp"},
	})
}

// TestRateCommand runs a small sale at a rate: the result records the
// rate (and no ramp, which was not in force), and the reproduce line
// carries --rate as given.
func TestRateCommand(t *testing.T) {
	tests := []struct {
		rate      string
		perSecond float64
	}{{"2000/s", 2000}, {"120000/m", 2000}}
	for _, tt := range tests {
		t.Run(tt.rate, func(t *testing.T) {
			code, res := runJSON(t, "--impl=atomic", "--clients=40", "--stock=20", "--workers=4", "--rate="+tt.rate, "--seed=3")
			if code != exitPass {
				t.Errorf("exit %d, want %d", code, exitPass)
			}
			if res.Config.Rate != tt.perSecond || res.Config.Ramp != 0 {
				t.Errorf("config rate %v, ramp %v; want %v a second and no ramp", res.Config.Rate, res.Config.Ramp, tt.perSecond)
			}
			if !strings.Contains(res.Command, " --rate="+tt.rate+" ") || strings.Contains(res.Command, "--ramp") {
				t.Errorf("reproduce line %q: want --rate=%s and no --ramp", res.Command, tt.rate)
			}
			if len(res.Runs) != 1 || res.Runs[0].Sold != 20 {
				t.Errorf("runs %+v: want one, 20 sold", res.Runs)
			}
		})
	}
}

// TestRateHelp: --help lists --rate, and run --help shows it in an
// example.
func TestRateHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}} {
		code, out, _ := lockbench(t, args...)
		if code != exitPass || !strings.Contains(out, "--rate N/s") {
			t.Errorf("%v: exit %d; help lacks --rate:\n%s", args, code, out)
		}
		if args[0] == "run" && !strings.Contains(out, "lockbench --impl=lua,watchdog --clients=30000 --rate=500/s") {
			t.Errorf("run --help lacks the example of --rate:\n%s", out)
		}
	}
}

// TestRateMatrixCell: a matrix cell's reproduce flags carry the rate in
// place of the ramp, and a burst cell drops the rate (its buyers must
// all arrive at once).
func TestRateMatrixCell(t *testing.T) {
	w := matrix.Defaults()
	w.Rate = 2000
	for _, tt := range []struct {
		cell      string
		want, not string
	}{
		{"lua/none", "rate=2000/s", "ramp"},
		{"none/none", "ramp=0s", "rate"},
	} {
		c, ok := matrix.Lookup(tt.cell)
		if !ok {
			t.Fatalf("no cell %s", tt.cell)
		}
		var flags []string
		for _, kv := range c.Flags(w, "") {
			flags = append(flags, kv[0]+"="+kv[1])
		}
		if !slices.Contains(flags, tt.want) || slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, tt.not+"=") }) {
			t.Errorf("%s: flags %v, want %s and no %s", tt.cell, flags, tt.want, tt.not)
		}
	}
	if got := (matrix.Cell{Burst: true}).Workload(w); got.Rate != 0 || got.Ramp != 0 || got.Arrivals().At(99, 100) != time.Millisecond {
		t.Errorf("a burst cell's workload: rate %v, ramp %v; want a burst", got.Rate, got.Ramp)
	}
}
