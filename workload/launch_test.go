package workload

import (
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/cpushare"
)

// TestProcessesGiveTheShare: a node process is given its share of the
// CPUs in its environment (cpushare.Env) when the launcher has one, and
// nothing when it has none.
func TestProcessesGiveTheShare(t *testing.T) {
	for _, c := range []struct {
		share int
		want  string
	}{
		{1, cpushare.Env + "=1"},
		{3, cpushare.Env + "=3"},
		{0, cpushare.Env + "="},
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
