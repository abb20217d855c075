package matrix

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/mysqltest"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/internal/zktest"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/workload"
)

// truthSeeds is how many seeds each cell runs: every cell that must fail
// fails in each of failSeeds seeds; every cell that must stay clean stays
// clean in each of safeSeeds. LOCKBENCH_TRUTH_SEEDS=f,s changes them (more
// for a soak, never fewer in CI).
func truthSeeds(t *testing.T) (failSeeds, safeSeeds int) {
	failSeeds, safeSeeds = 5, 20
	if v := os.Getenv("LOCKBENCH_TRUTH_SEEDS"); v != "" {
		f, s, ok := strings.Cut(v, ",")
		a, err1 := strconv.Atoi(f)
		b, err2 := strconv.Atoi(s)
		if !ok || err1 != nil || err2 != nil || a < 1 || b < 1 {
			t.Fatalf("LOCKBENCH_TRUTH_SEEDS=%q: want two counts, failing,safe (e.g. 5,20)", v)
		}
		failSeeds, safeSeeds = a, b
	}
	return failSeeds, safeSeeds
}

// truthKinds are the servers the truth table runs on: the embedded one
// and, when redis-server is there (or required), a real one.
// LOCKBENCH_TRUTH_KINDS=redis (or embedded) narrows them: CI runs the
// table against the real redis-server only, within its time.
func truthKinds(t *testing.T) []string {
	t.Helper()
	kinds := []string{"embedded"}
	if os.Getenv("LOCKBENCH_REQUIRE_REDIS") == "1" || redistest.Available() {
		kinds = append(kinds, "redis")
	} else {
		t.Log("redis-server not on PATH: real-Redis rows skipped (LOCKBENCH_REQUIRE_REDIS=1 makes this fatal)")
	}
	if os.Getenv(redistest.RequireSentinelEnv) == "1" || redistest.SentinelAvailable() {
		kinds = append(kinds, "sentinel")
	} else {
		t.Log("redis-sentinel not on PATH: the failover rows skipped (LOCKBENCH_REQUIRE_SENTINEL=1 makes this fatal)")
	}
	v := os.Getenv("LOCKBENCH_TRUTH_KINDS")
	if v == "" {
		return kinds
	}
	var out []string
	for _, k := range strings.Split(v, ",") {
		if k = strings.TrimSpace(k); k != "embedded" && k != "redis" && k != "sentinel" {
			t.Fatalf("LOCKBENCH_TRUTH_KINDS=%q: want embedded, redis, sentinel or several, comma separated", v)
		}
		if k == "sentinel" && !slices.Contains(kinds, "sentinel") {
			t.Fatalf("LOCKBENCH_TRUTH_KINDS=%q: redis-sentinel is not on PATH", v)
		}
		if k == "redis" && !slices.Contains(kinds, "redis") {
			t.Fatalf("LOCKBENCH_TRUTH_KINDS=%q: redis-server is not on PATH", v)
		}
		out = append(out, k)
	}
	return out
}

// mustFail reports whether a cell expects some property to be violated.
func mustFail(e Expect) bool {
	return e.Lock == Must || e.Data == Must || e.Live == Must
}

// serverFault reports whether a cell's fault acts on the server itself,
// so that the cell needs a server of its own.
func serverFault(c Cell) bool {
	return c.Fault == "server-pause" || c.Fault == "restart"
}

// TestTruthTable runs the catalog's truth table as `lockbench matrix` does,
// on the embedded server and on a real redis-server, over many seeds: a
// harness that misses a seeded bug, or raises a false alarm on a safe
// lock, is worthless.
func TestTruthTable(t *testing.T) {
	if testing.Short() {
		t.Skip("the truth table takes minutes")
	}
	failSeeds, safeSeeds := truthSeeds(t)
	kinds := truthKinds(t)
	// The cells whose lock or inventory lives in ZooKeeper or MySQL run
	// once, under the last kind: those servers are the same for both.
	serversKind := kinds[len(kinds)-1]
	if k := slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == "sentinel" }); len(k) > 0 {
		serversKind = k[len(k)-1]
	}
	// The cells whose lock or inventory lives in ZooKeeper or MySQL wait on
	// those servers, not on this process: they take slots of their own,
	// beside the Redis cells.
	servers := make(chan struct{}, 2)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			// The two kinds run side by side: a cell spends most of its
			// time waiting (arrivals, leases, pauses), not computing.
			t.Parallel()
			// The embedded server runs in this process and spends a
			// processor's worth on the spinning locks of a few cells:
			// more cells at once would starve lock holders past their
			// lease and turn load into false alarms. A real server takes
			// more.
			redisSlots := make(chan struct{}, map[string]int{"embedded": 2, "redis": 3, "sentinel": 2}[kind])
			var shared workload.Backend
			if kind != "sentinel" {
				shared = newBackend(t, kind)
			}
			zk := truthZooKeeper(t, kind == serversKind && kind != "sentinel")
			for i, cell := range Truth {
				t.Run(cell.Name(), func(t *testing.T) {
					im, ok := harness.Lookup(cell.Impl)
					if !ok {
						t.Fatalf("no implementation %s", cell.Impl)
					}
					needs := im.Needs()
					mysqlCell := needs.Has(workload.NeedsMySQL)
					zkCell := needs.Has(workload.NeedsZooKeeper)
					if (zkCell || mysqlCell) && kind != serversKind {
						t.Skipf("the cell's server is the same for every kind: it runs once, under %s", serversKind)
					}
					if zkCell && zk == nil {
						t.Skipf("no ZooKeeper: apt-get install zookeeperd (%s=1 makes its absence fatal)", zktest.RequireEnv)
					}
					if sentinelCell(cell) != (kind == "sentinel") {
						t.Skip("the failover cells run under the sentinel kind only, the others under every other kind")
					}
					t.Parallel()
					slots := redisSlots
					if mysqlCell || zkCell {
						slots = servers
					}
					slots <- struct{}{}
					defer func() { <-slots }()
					if kind == "redis" && multiServer(cell) && cell.Fault == "restart" {
						t.Skip("lockbench cannot restart redis-servers it reaches by address")
					}
					var sv workload.Servers
					switch {
					case kind == "sentinel":
						sv.Redis = sentinelBackend(t)
					case mysqlCell:
						sv.MySQL = mysqltest.Start(t).Dial(t, fmt.Sprintf("lbtruth_%d", i))
					case multiServer(cell):
						sv.Redis = newClusterBackend(t, kind)
					case kind == "embedded" || serverFault(cell):
						sv.Redis = newBackend(t, kind)
					default:
						sv.Redis = shared
					}
					if zkCell {
						sv.ZooKeeper = zk
					}
					base := harness.Plan{Workload: Defaults()}
					n := safeSeeds
					if mustFail(cell.Want) && !cell.Want.Sometimes {
						n = failSeeds
					}
					if kind == "sentinel" {
						n = min(n, failoverSeeds)
					}
					seen := 0 // runs that showed a racy cell's failure
					for seed := uint64(1); seed <= uint64(n); seed++ {
						base.Seed = seed
						// A prefix per seed: a command the last sale timed
						// out on (an unknown outcome) may still land after
						// that sale cleared its keys, on a busy machine.
						base.Workload.Prefix = fmt.Sprintf("lockbench-test:%d:%d:", i, seed)
						mc, err := RunCell(t.Context(), &sv, cell, Options{Base: base})
						if err != nil {
							t.Fatalf("seed %d: %v", seed, err)
						}
						if cell.Want.Sometimes {
							if meets(cell.Want, &mc.Run) {
								seen++
							}
							continue
						}
						if !mc.Match {
							t.Errorf("seed %d: expected %s, measured %s (sold %d/%d, oversold %d, overlaps %d, linearizability %s, faults fired %d)\n  reasons: %s\n  reproduce: %s",
								seed, mc.Expected, mc.Measured, mc.Run.Sold, mc.Run.Stock, mc.Run.Oversold, mc.Run.LockOverlaps,
								mc.Run.Linearizability, len(mc.Run.Faults), strings.Join(mc.Run.Reasons, "; "), reproduce(cell, mc, seed))
						}
					}
					if cell.Want.Sometimes && seen == 0 {
						t.Errorf("%s: no run in %d seeds showed %s", cell.Name(), n, cell.Want.Label)
					}
					t.Logf("%d seeds", n)
				})
			}
		})
	}
}

// truthZooKeeper starts the ZooKeeper of the truth table's ZooKeeper
// cells, under the embedded kind only (the inventory's server makes no
// difference to them), or returns nil.
func truthZooKeeper(t *testing.T, want bool) workload.ZooKeeperServer {
	t.Helper()
	if !want || !zktest.Available() && os.Getenv(zktest.RequireEnv) != "1" {
		return nil
	}
	z, err := workload.DialZooKeeper(t.Context(), zktest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// newBackend starts a server of the kind for the test: the embedded one,
// or a redis-server on a free loopback port.
func newBackend(t *testing.T, kind string) workload.Backend {
	t.Helper()
	if kind == "embedded" {
		b, err := workload.StartEmbedded()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	b, err := workload.DialRedis(context.Background(), redistest.Start(t), "")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reproduce is the command line that runs a cell of the truth table on
// its own (the servers left for the reader to add).
func reproduce(cell Cell, mc reports.MatrixCell, seed uint64) string {
	var parts []string
	for _, kv := range cell.Flags(Defaults(), mc.Fault) {
		parts = append(parts, "--"+kv[0]+"="+kv[1])
	}
	return fmt.Sprintf("lockbench %s --seed=%d", strings.Join(parts, " "), seed)
}

// newClusterBackend starts the servers a multi-server cell runs on: five
// embedded servers, or three redis-servers.
func newClusterBackend(t *testing.T, kind string) workload.Backend {
	t.Helper()
	if kind == "embedded" {
		c, err := workload.StartEmbeddedCluster(5)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c, err := workload.DialCluster(context.Background(), []string{redistest.Start(t), redistest.Start(t), redistest.Start(t)}, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// multiServer reports whether a cell's implementation runs on several
// servers.
func multiServer(c Cell) bool { return c.Impl == "redlock" }

// TestCellWhoseFaultNeverFiredDoesNotMatch: a cell whose fault never
// struck tested nothing, so it must not pass as its expected verdict.
// atomic has no lock holder, so pause-holder has nowhere to strike.
func TestCellWhoseFaultNeverFiredDoesNotMatch(t *testing.T) {
	w := Defaults()
	w.Clients, w.Stock = 200, 100
	cell := Cell{Impl: "atomic", Fault: "pause-holder", Want: Safe}
	sv := workload.Servers{Redis: newBackend(t, "embedded")}
	mc, err := RunCell(t.Context(), &sv, cell, Options{Base: harness.Plan{Workload: w, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(mc.Run.Faults); got != 0 {
		t.Fatalf("pause-holder struck atomic %d times; the test needs a fault with no window", got)
	}
	if mc.Match || mc.Measured != NotFired {
		t.Errorf("cell %s: match %v, measured %q; want no match, measured %q", mc.Cell, mc.Match, mc.Measured, NotFired)
	}
}

// unpausable hides the Pause and Restart of the backend it wraps: a
// server lockbench cannot pause.
type unpausable struct{ workload.Backend }

// TestRunSkipsWhatTheServersCannotTake: a cell whose fault the servers
// cannot take is skipped and named, never run, never judged.
func TestRunSkipsWhatTheServersCannotTake(t *testing.T) {
	cells := []Cell{{Impl: "atomic", Fault: "server-pause", Want: Safe}, {Impl: "atomic", Want: Safe}}
	sv := workload.Servers{Redis: unpausable{newBackend(t, "embedded")}}
	w := Defaults()
	w.Clients, w.Stock = 100, 50
	res, err := Run(t.Context(), &sv, cells, Options{Base: harness.Plan{Workload: w, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "atomic/server-pause skipped") {
		t.Errorf("skipped %q, want atomic/server-pause named", res.Skipped)
	}
	if len(res.Cells) != 1 || res.Cells[0].Cell != "atomic/none" || !res.Cells[0].Match {
		t.Errorf("cells run %+v, want atomic/none alone, as expected", res.Cells)
	}
}

// TestSweepMatch: how a sweep's values judge a cell.
func TestSweepMatch(t *testing.T) {
	hit, miss, none := SweepRun{true, true}, SweepRun{true, false}, SweepRun{false, false}
	tests := []struct {
		name string
		want Expect
		runs []SweepRun
		ok   bool
	}{
		{"breaks at one value", OverlapOversell, []SweepRun{miss, miss, hit}, true},
		{"never breaks", OverlapOversell, []SweepRun{miss, miss, miss}, false},
		{"safe everywhere", Safe, []SweepRun{hit, hit, hit}, true},
		{"a false alarm at one value", Safe, []SweepRun{hit, miss, hit}, false},
		{"values that never fired count for nothing", Safe, []SweepRun{none, hit}, true},
		{"a breaking value that never fired", OverlapOversell, []SweepRun{miss, none}, false},
		{"nothing fired", Safe, []SweepRun{none, none}, false},
		{"sometimes", Racy, []SweepRun{miss, miss}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SweepMatch(tt.want, tt.runs); got != tt.ok {
				t.Errorf("SweepMatch = %v, want %v", got, tt.ok)
			}
		})
	}
}

// TestRowsOfRegisteredImplementations: an implementation a user
// registered is judged by the row AddRow gave it, or, without one, run
// against the faults of its kind and measured only.
func TestRowsOfRegisteredImplementations(t *testing.T) {
	lua, _ := harness.Lookup("lua")
	for _, name := range []string{"test-with-row", "test-without-row"} {
		im := lua
		im.Name = name
		if err := harness.Register(im); err != nil {
			t.Fatal(err)
		}
	}
	if err := AddRow(Cell{Impl: "test-with-row", Want: Safe}, Cell{Impl: "test-with-row", Fault: "expire", Want: Overlap}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]Cell{{{Impl: "lua", Want: Safe}}, {{Impl: "test-with-row", Fault: "no-such-fault"}}, {{Want: Safe}}} {
		if err := AddRow(bad...); err == nil {
			t.Errorf("AddRow(%+v) accepted", bad)
		}
	}
	with, _ := harness.Lookup("test-with-row")
	without, _ := harness.Lookup("test-without-row")
	cells, err := Select([]harness.Impl{with, without}, "")
	if err != nil {
		t.Fatal(err)
	}
	var rowOf = map[string][]string{}
	for _, c := range cells {
		rowOf[c.Impl] = append(rowOf[c.Impl], c.Name()+" "+c.Want.Label)
	}
	if got := rowOf["test-with-row"]; !slices.Equal(got, []string{"test-with-row/none safe", "test-with-row/expire overlap"}) {
		t.Errorf("row given: %q", got)
	}
	got := rowOf["test-without-row"]
	if len(got) < 5 || !slices.Contains(got, "test-without-row/pause-holder "+MeasuredOnly.Label) {
		t.Errorf("row measured only: %q", got)
	}
	w := Defaults()
	w.Clients, w.Stock = 100, 50
	sv := workload.Servers{Redis: newBackend(t, "embedded")}
	mc, err := RunCell(t.Context(), &sv, Cell{Impl: "test-without-row", Fault: "pause-holder", Want: MeasuredOnly}, Options{Base: harness.Plan{Workload: w, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !mc.Match || mc.Measured == NotFired || mc.Expected != MeasuredOnly.Label {
		t.Errorf("measured-only cell: match %v, measured %q, expected %q", mc.Match, mc.Measured, mc.Expected)
	}
}
