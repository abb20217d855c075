package harness

import "testing"

// TestCommandLine: flags in the order given, the seed last, a value the
// shell would split or expand quoted, the program as given.
func TestCommandLine(t *testing.T) {
	tests := []struct {
		name    string
		program string
		flags   [][2]string
		want    string
	}{
		{"no flags", "lockbench", nil, "lockbench --seed=7"},
		{"plain values", "lockbench matrix", [][2]string{{"impl", "lua,watchdog"}, {"faults", "pause-holder:for=250ms"}, {"redis", "127.0.0.1:6379"}},
			"lockbench matrix --impl=lua,watchdog --faults=pause-holder:for=250ms --redis=127.0.0.1:6379 --seed=7"},
		{"a DSN", "lockbench", [][2]string{{"mysql-dsn", "root@tcp(127.0.0.1:3306)/"}}, "lockbench --mysql-dsn='root@tcp(127.0.0.1:3306)/' --seed=7"},
		{"spaces and quotes", "go run ./examples/customlock", [][2]string{{"target-start", "node server.js --name='a'"}, {"prefix", ""}},
			`go run ./examples/customlock --target-start='node server.js --name='\''a'\''' --prefix='' --seed=7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CommandLine(tt.program, tt.flags, 7); got != tt.want {
				t.Errorf("CommandLine =\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}
