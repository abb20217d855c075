package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/reports"
)

var registered sync.Once

func setup(t *testing.T) {
	t.Helper()
	registered.Do(func() {
		if err := register(); err != nil {
			t.Fatal(err)
		}
	})
}

// redises are the Redis servers the sales run on: the embedded one, and
// a real redis-server when there is one (required with
// LOCKBENCH_REQUIRE_REDIS=1).
func redises(t *testing.T) map[string]backends.Options {
	t.Helper()
	out := map[string]backends.Options{"embedded": {}}
	if !redistest.Available() {
		if os.Getenv(redistest.RequireEnv) == "1" {
			t.Fatal("redis-server not on PATH")
		}
		t.Logf("redis-server not on PATH: the real-Redis case skipped (%s=1 makes this fatal)", redistest.RequireEnv)
		return out
	}
	out["redis"] = backends.Options{Backend: backends.BackendRedis, Redis: []string{redistest.Start(t)}}
	return out
}

// TestOwnStore runs a sale of each of the team's sales from go test, on
// their own inventory layout, the way a team would gate their store: the
// watched one passes the checker (no oversell, a linearizable history,
// the stock sold out); the unguarded one is caught, its lost updates an
// oversell the audit shows and a history that is not linearizable.
//
// Buyers overlap by construction, not by timing: each holds its business
// step for 20 ms between its read and its write, and twenty workers per
// node run at once, so that the unguarded sale loses updates however the
// machine schedules it. It is still a race, so the broken sale is tried
// a few times; the test fails only if no try was caught.
func TestOwnStore(t *testing.T) {
	setup(t)
	for name, opts := range redises(t) {
		t.Run(name, func(t *testing.T) {
			for _, tt := range []struct {
				impl string
				safe bool
			}{
				{"ownstore-correct", true},
				{"ownstore-broken", false},
			} {
				t.Run(tt.impl, func(t *testing.T) {
					im, ok := harness.Lookup(tt.impl)
					if !ok {
						t.Fatalf("%s is not registered", tt.impl)
					}
					servers, err := backends.Open(t.Context(), opts, im.Needs())
					if err != nil {
						t.Fatal(err)
					}
					defer servers.Close()
					w := harness.Defaults()
					w.Prefix = "ownstore-test:"
					w.Clients, w.Stock, w.Ramp, w.Workers, w.Hold = 200, 100, 200*time.Millisecond, 20, 20*time.Millisecond
					for try := range 3 {
						res, err := harness.Run(t.Context(), &servers.Set, harness.Plan{Impl: im, Workload: w, Seed: uint64(try + 1)})
						if err != nil {
							t.Fatal(err)
						}
						run, h := reports.NewRun(res.History, res.Report, res.NotFired...), res.History
						safe := run.Data.Status == checker.OK && run.Oversold == 0 && run.Data.Linearizability.Status == checker.OK
						if tt.safe {
							// Twice the buyers as units: every unit goes, whatever
							// a loaded machine does to a few buyers.
							if !safe || h.Final.Stock != 0 {
								t.Errorf("data safety %s, linearizability %s, oversold %d, stock left %d of %d; want safe and sold out\n%s",
									run.Data.Status, run.Data.Linearizability.Status, run.Oversold, h.Final.Stock, w.Stock, strings.Join(run.Reasons, "\n"))
							}
							return
						}
						if !safe {
							if run.Data.Status != checker.Violated || run.Oversold == 0 && run.Data.Linearizability.Status != checker.Violated {
								t.Errorf("data safety %s, linearizability %s, oversold %d: an unguarded sale that lost updates must be an oversell or not linearizable",
									run.Data.Status, run.Data.Linearizability.Status, run.Oversold)
							}
							return
						}
						t.Logf("try %d: no lost update this time", try+1)
					}
					t.Error("the unguarded sale was never caught in 3 tries")
				})
			}
		})
	}
}

// TestList: lockbench list names them.
func TestList(t *testing.T) {
	setup(t)
	var out bytes.Buffer
	if code := cli.Main([]string{"list"}, &out, os.Stderr); code != 0 || !strings.Contains(out.String(), "ownstore-broken") {
		t.Errorf("list: exit %d\n%s", code, out.String())
	}
}
