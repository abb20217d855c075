package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/reports"
)

// TestMatrixSweep: a sweep of the pause length finds where set-nx-ex
// breaks (every value below it held, the value itself broke, and the
// cell's reproduce line runs that value), and setnx, which has no lease
// to outlast, holds at every value.
func TestMatrixSweep(t *testing.T) {
	code, res := runJSON(t, "matrix", "--impl=set-nx-ex,setnx", "--faults=pause-holder", "--sweep=for=0.5x..3x/3", "--seed=1")
	if code != exitPass {
		t.Errorf("exit %d, want %d", code, exitPass)
	}
	if len(res.Matrix) != 2 {
		t.Fatalf("%d cells, want 2", len(res.Matrix))
	}
	for _, c := range res.Matrix {
		if c.Sweep == nil || len(c.Sweep.Points) != 3 {
			t.Fatalf("%s: sweep %+v, want 3 values", c.Cell, c.Sweep)
		}
		if got := []string{c.Sweep.Points[0].Value, c.Sweep.Points[1].Value, c.Sweep.Points[2].Value}; !slices.Equal(got, []string{"0.5x", "1.75x", "3x"}) {
			t.Errorf("%s: values %v", c.Cell, got)
		}
		if !c.Match {
			t.Errorf("%s: expected %s, measured %s", c.Cell, c.Expected, c.Measured)
		}
		switch c.Impl {
		case "set-nx-ex":
			i := slices.IndexFunc(c.Sweep.Points, func(p reports.SweepPoint) bool { return p.Broke })
			if i < 0 {
				t.Fatalf("set-nx-ex never broke: %+v", c.Sweep.Points)
			}
			p := c.Sweep.Points[i]
			if c.Sweep.BreaksAt != p.Value {
				t.Errorf("breaks at %q, the first value that broke is %q", c.Sweep.BreaksAt, p.Value)
			}
			if !strings.Contains(c.Fault, "for=") || c.Run.Oversold == 0 && c.Run.Lock.Overlaps == 0 {
				t.Errorf("the cell's run is not the breaking one: fault %q, %d oversold, %d overlaps", c.Fault, c.Run.Oversold, c.Run.Lock.Overlaps)
			}
		case "setnx":
			for _, p := range c.Sweep.Points {
				if p.Broke || p.Measured != matrix.Safe.Label {
					t.Errorf("setnx at %s: %s", p.Value, p.Measured)
				}
			}
			if c.Sweep.BreaksAt != "" {
				t.Errorf("setnx breaks at %s", c.Sweep.BreaksAt)
			}
		}
	}
}

func TestMatrixSweepUsage(t *testing.T) {
	checkUsage(t, []usageCase{
		{[]string{"matrix", "--sweep=for"}, "--sweep"},
		{[]string{"matrix", "--sweep=for=2x..1x"}, "--sweep"},
		{[]string{"matrix", "--sweep=count=1x..2x", "--faults=pause-holder"}, "--sweep"},
		{[]string{"matrix", "--sweep=for=1x..2x", "--faults=crash-holder"}, "no fault of the chosen cells"},
		{[]string{"--sweep=for=1x..2x"}, "sweep"},
	})
}

// TestCellCommand: a cell's reproduce line is built by the one builder of
// reproduce lines: the cell's own workload and fault, and every other
// flag the matrix was given, never the matrix's own (--sweep, --junit).
func TestCellCommand(t *testing.T) {
	var o runOpts
	fs := matrixFlags(&o)
	if err := fs.Parse([]string{"--hold=1ms", "--attempts=2", "--pool=8", "--sweep=for=1x..2x", "--junit=x.xml", "--seed=9"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.validate(fs); err != nil {
		t.Fatal(err)
	}
	got := o.cellCommand(reports.MatrixCell{Cell: "lua/pause-holder", Impl: "lua", Fault: "pause-holder:for=250ms"})
	for _, want := range []string{"lockbench --impl=lua --faults=pause-holder:for=250ms --nodes=2 --clients=400 ", "--ttl=200ms", "--hold=1ms", "--attempts=2", "--pool=8", "--seed=9"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	for _, not := range []string{"--sweep", "--junit"} {
		if strings.Contains(got, not) {
			t.Errorf("%q carries the matrix's %s", got, not)
		}
	}
}
