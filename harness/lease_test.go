package harness

import (
	"cmp"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
)

// shortLease is lua declaring a lease 1,000 times longer than the one it
// takes: whatever lease it is given, or its DefaultTTL, it sets a
// thousandth of it on the server.
func shortLease(t *testing.T) Impl {
	t.Helper()
	im, ok := locks.Lookup("lua")
	if !ok {
		t.Fatal("no lua")
	}
	inner := im.New
	im.Name = "test-lua-short-lease"
	im.New = func(ctx context.Context, env locks.Env) (locks.Locker, error) {
		env.TTL = cmp.Or(env.TTL, im.DefaultTTL) / 1000
		return inner(ctx, env)
	}
	return Lock(im)
}

// TestLeaseAsDeclared: a lock whose lease on the server is a thousandth
// of the one it declares fails, with no fault (its DefaultTTL), with
// --ttl, and under --faults (whose lease is forced), named by the check;
// lua, which takes what it says, passes the same sales.
func TestLeaseAsDeclared(t *testing.T) {
	s, err := backends.Open(t.Context(), backends.Options{}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lua, _ := Lookup("lua")
	tests := []struct {
		name  string
		ttl   time.Duration
		fault string
	}{
		{"declared lease", 0, ""},
		{"--ttl", 2 * time.Second, ""},
		{"--faults", 0, "slow-holder:for=10ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs, err := faults.Parse(tt.fault)
			if err != nil {
				t.Fatal(err)
			}
			w := Defaults()
			w.Clients, w.Stock, w.Ramp, w.Workers, w.TTL = 60, 30, 50*time.Millisecond, 10, tt.ttl
			for _, im := range []Impl{shortLease(t), lua} {
				res, err := Run(t.Context(), &s.Set, Plan{Impl: im, Workload: w, Faults: specs, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				named := strings.Contains(strings.Join(res.Report.Reasons, " "), "lease not as declared")
				if want := im.Name != "lua"; named != want || res.Report.Pass == want {
					t.Errorf("%s: pass %v, reasons %q; want the lease check to fail it: %v", im.Name, res.Report.Pass, res.Report.Reasons, want)
				}
			}
		})
	}
}
