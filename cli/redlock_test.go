package cli

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/servers"
)

// TestRedlockServerCounts: redlock needs three servers or more; a single
// --redis still runs every other implementation, and --impl=all leaves
// redlock out there.
func TestRedlockServerCounts(t *testing.T) {
	cases := []struct {
		args []string
		want string // in the message
	}{
		{[]string{"--impl=redlock", "--redis=127.0.0.1:1"}, "at least 3"},
		{[]string{"--impl=redlock", "--redis=127.0.0.1:1,127.0.0.1:2"}, "at least 3"},
		{[]string{"--impl=redlock", "--redlock-servers=2"}, "--redlock-servers"},
		{[]string{"--impl=redlock", "--redlock-servers=5", "--redis=127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}, "--redlock-servers"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errOut := lockbench(t, c.args...)
			if code != exitUsage || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, errOut, exitUsage, c.want)
			}
		})
	}
	var o runOpts
	fs := runFlags(&o)
	if err := fs.Parse([]string{"--impl=all", "--redis=127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	impls, err := o.validate(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range impls {
		if im.Needs().Has(servers.KindRedisServers) {
			t.Errorf("--impl=all on one --redis kept %s", im.Name)
		}
	}
}

// TestRedlockOnRealServers runs redlock on three real redis-servers given
// to --redis: safe without a fault, and two holders when the key is
// deleted on a majority (expire).
func TestRedlockOnRealServers(t *testing.T) {
	if !redistest.Available() && os.Getenv(redistest.RequireEnv) != "1" {
		t.Skip("redis-server not on PATH (LOCKBENCH_REQUIRE_REDIS=1 makes this fatal)")
	}
	addrs := strings.Join([]string{redistest.Start(t), redistest.Start(t), redistest.Start(t)}, ",")
	common := []string{"--impl=redlock", "--redis=" + addrs, "--clients=200", "--stock=150", "--ramp=300ms", "--workers=10", "--ttl=300ms", "--command-timeout=500ms", "--timeout=20s", "--seed=1"}
	code, res := runJSON(t, common...)
	if code != 0 || len(res.Runs) != 1 || res.Runs[0].Sold != 150 || !strings.HasPrefix(res.Config.Backend, "3 servers") {
		t.Fatalf("redlock on 3 servers, no fault: exit %d, result %+v", code, res)
	}
	code, res = runJSON(t, append(common, "--faults=expire")...)
	if code != exitFail || res.Runs[0].Lock.Overlaps == 0 {
		t.Errorf("redlock, expire on a majority: exit %d, overlaps %d; want exit 1 and an overlap", code, res.Runs[0].Lock.Overlaps)
	}
}

// TestRedlockRestartOne makes Kleppmann's case happen on five embedded
// servers: a server of a bare majority restarts empty, two holders.
func TestRedlockRestartOne(t *testing.T) {
	for seed := range 3 {
		code, res := runJSON(t, "--impl=redlock", "--faults=restart", "--clients=200", "--stock=150", "--ramp=300ms", "--workers=10",
			"--ttl=300ms", "--command-timeout=500ms", "--timeout=20s", fmt.Sprintf("--seed=%d", seed+1))
		if code != exitFail || len(res.Runs) != 1 || res.Runs[0].Lock.Overlaps == 0 || len(res.Runs[0].Faults) != 1 {
			t.Errorf("seed %d: exit %d, runs %+v; want exit 1, one restart, an overlap", seed+1, code, res.Runs)
		}
	}
}
