package cli

import (
	"os"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/redistest"
)

// TestPrefixInUse: a run on a prefix another run claims is refused with
// exit 2, naming that run, and leaves its claim alone; a run on a prefix
// nobody claims leaves no claim behind (issue 24, row 10).
func TestPrefixInUse(t *testing.T) {
	if os.Getenv(redistest.RequireEnv) != "1" && !redistest.Available() {
		t.Skip("redis-server not on PATH: the prefix claim's real-Redis test skipped (" + redistest.RequireEnv + "=1 makes this fatal)")
	}
	addr := redistest.Start(t)
	c := redistest.Client(t, addr)
	const key, claim = "lockbench:lua:claim", `{"id":"9f2c","host":"builder-7","pid":4242,"started":"2026-11-26T09:12:03Z"}`
	if err := c.Set(t.Context(), key, claim, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, []usageCase{
		{[]string{"--impl=lua", "--redis=" + addr, "--clients=20", "--stock=10"}, `--prefix: "lockbench:lua:" is in use by the run of pid 4242 on builder-7, started 2026-11-26 09:12:03 UTC`},
		{[]string{"--impl=lua", "--redis=" + addr, "--clients=20", "--stock=10", "--force"}, "in use by the run of pid 4242"},
	})
	if v, _ := c.Get(t.Context(), key).Result(); v != claim {
		t.Errorf("the other run's claim became %q", v)
	}
	c.Del(t.Context(), key)
	if code, out, errOut := lockbench(t, "--impl=lua", "--redis="+addr, "--clients=20", "--stock=10"); code != exitPass {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if n, _ := c.Exists(t.Context(), key).Result(); n != 0 {
		t.Error("the run left its claim")
	}
}
