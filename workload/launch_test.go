package workload

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/cpushare"
)

// TestProcessesGiveTheShare: a node process is given its share of the
// CPUs in its environment (cpushare.Env) when the launcher has one, and
// nothing when it has none.
func TestProcessesGiveTheShare(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one CPU: no share is smaller than every CPU")
	}
	t.Setenv(cpushare.Env, "") // restored after the test; not inherited
	os.Unsetenv(cpushare.Env)
	for _, c := range []struct {
		share int
		want  string
	}{
		{1, cpushare.Env + "=1"},
		{0, cpushare.Env + "="},
		{runtime.GOMAXPROCS(0), cpushare.Env + "="}, // every CPU: no share
	} {
		p := Processes{Command: []string{"sh", "-c", `echo "` + cpushare.Env + `=$` + cpushare.Env + `"; exit 0`}, Share: c.share}
		proc, err := p.Launch(t.Context(), 0, "127.0.0.1:1", Credentials{Token: "t", Secret: "s"})
		if err != nil {
			t.Skipf("cannot start sh: %v", err)
		}
		<-proc.Exited()
		if got := strings.TrimSpace(proc.Output()); got != c.want {
			t.Errorf("share %d: the node's environment says %q, want %q", c.share, got, c.want)
		}
	}
}
