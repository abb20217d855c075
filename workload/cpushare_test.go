package workload

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

func TestCPUShare(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	tests := []struct {
		name  string
		env   string // GOMAXPROCS in the environment, "" for none
		nodes int
		want  []string
	}{
		{"one node has every CPU", "", 1, []string{"GOMAXPROCS=" + strconv.Itoa(procs)}},
		{"two nodes share them", "", 2, []string{"GOMAXPROCS=" + strconv.Itoa(max(1, procs/2))}},
		{"more nodes than CPUs get one each", "", procs + 1, []string{"GOMAXPROCS=1"}},
		{"the user's GOMAXPROCS stands", "3", 2, nil},
		{"no nodes", "", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tt.env)
			if tt.env == "" {
				os.Unsetenv("GOMAXPROCS") // t.Setenv puts it back after
			}
			if got := CPUShare(tt.nodes); !slices.Equal(got, tt.want) {
				t.Errorf("CPUShare(%d) = %q, want %q", tt.nodes, got, tt.want)
			}
		})
	}
}
