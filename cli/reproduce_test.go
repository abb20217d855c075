package cli

import (
	"testing"
)

// TestReproduceLines: the run's, the matrix's and a custom binary's
// reproduce lines come from the one builder: Program, the subcommand,
// the flags given (a repeated flag once per value, quoted for the
// shell), the seed.
func TestReproduceLines(t *testing.T) {
	tests := []struct {
		name    string
		program string
		sub     string
		args    []string
		want    string
	}{
		{"run", "", "", []string{"--impl=lua,watchdog", "--clients=400", "--seed=3"}, "lockbench --impl=lua,watchdog --clients=400 --seed=3"},
		{"matrix", "", "matrix", []string{"--impl=atomic", "--faults=server-pause", "--seed=3"}, "lockbench matrix --impl=atomic --faults=server-pause --seed=3"},
		{"a user's binary", "go run ./examples/customlock", "", []string{"--impl=example-broken", "--seed=3"}, "go run ./examples/customlock --impl=example-broken --seed=3"},
		{"a repeated flag, quoted", "", "", []string{"--target-start=node a.js", "--target-start=node b.js", "--out=x", "--seed=3"},
			"lockbench --target-start='node a.js' --target-start='node b.js' --seed=3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.program != "" {
				defer func(p string) { Program = p }(Program)
				Program = tt.program
			}
			var o runOpts
			fs := runFlags(&o)
			if tt.sub == "matrix" {
				fs = matrixFlags(&o)
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			o.flags = fs
			if got := o.command(tt.sub); got != tt.want {
				t.Errorf("reproduce line\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}
