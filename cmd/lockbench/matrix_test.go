package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/internal/zktest"
	"github.com/lockbench/lockbench/locks"
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
	v := os.Getenv("LOCKBENCH_TRUTH_KINDS")
	if v == "" {
		return kinds
	}
	var out []string
	for _, k := range strings.Split(v, ",") {
		if k = strings.TrimSpace(k); k != "embedded" && k != "redis" {
			t.Fatalf("LOCKBENCH_TRUTH_KINDS=%q: want embedded, redis or both, comma separated", v)
		}
		if k == "redis" && !slices.Contains(kinds, "redis") {
			t.Fatalf("LOCKBENCH_TRUTH_KINDS=%q: redis-server is not on PATH", v)
		}
		out = append(out, k)
	}
	return out
}

// mustFail reports whether a cell expects some property to be violated.
func mustFail(e faults.Expect) bool {
	return e.Lock == faults.Must || e.Data == faults.Must || e.Live == faults.Must
}

// serverFault reports whether a cell's fault acts on the server itself,
// so that the cell needs a server of its own.
func serverFault(c faults.Cell) bool {
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
			redisSlots := make(chan struct{}, map[string]int{"embedded": 2, "redis": 3}[kind])
			shared := newBackend(t, kind)
			zk := truthZooKeeper(t, kind == serversKind)
			for i, cell := range faults.Truth {
				t.Run(cell.Name(), func(t *testing.T) {
					im, _ := locks.Lookup(cell.Impl)
					mysqlCell := im.Store == locks.StoreMySQL
					if (im.ZooKeeper || mysqlCell) && kind != serversKind {
						t.Skipf("the cell's server is the same for every kind: it runs once, under %s", serversKind)
					}
					if im.ZooKeeper && zk == nil {
						t.Skipf("no ZooKeeper: apt-get install zookeeperd (%s=1 makes its absence fatal)", zktest.RequireEnv)
					}
					t.Parallel()
					slots := redisSlots
					if mysqlCell || im.ZooKeeper {
						slots = servers
					}
					slots <- struct{}{}
					defer func() { <-slots }()
					backend := shared
					if kind == "redis" && multiServer(cell) && cell.Fault == "restart" {
						t.Skip("lockbench cannot restart redis-servers it reaches by address")
					}
					switch {
					case multiServer(cell):
						backend = newClusterBackend(t, kind)
					case kind == "embedded" || serverFault(cell):
						backend = newBackend(t, kind)
					}
					var o runOpts
					fs := matrixFlags(&o)
					if err := fs.Parse(nil); err != nil {
						t.Fatal(err)
					}
					o.faults = ""
					if _, err := o.validate(fs); err != nil {
						t.Fatal(err)
					}
					if kind == "redis" {
						o.redis = "test" // only for the reproduce lines
					}
					if mysqlCell {
						o.mysql = mysqlFor(t, fmt.Sprintf("lbtruth_%d", i))
					}
					if im.ZooKeeper {
						o.zk, o.zkServer = zk.Addr, zk
					}
					n := safeSeeds
					if mustFail(cell.Want) && !cell.Want.Sometimes {
						n = failSeeds
					}
					seen := 0 // runs that showed a racy cell's failure
					for seed := uint64(1); seed <= uint64(n); seed++ {
						o.seed = seed
						// A prefix per seed: a command the last sale timed
						// out on (an unknown outcome) may still land after
						// that sale cleared its keys, on a busy machine.
						o.prefix = fmt.Sprintf("lockbench-test:%d:%d:", i, seed)
						mc, err := o.runCell(t.Context(), cell, backend, nil)
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
								mc.Run.Linearizability, len(mc.Run.Faults), strings.Join(mc.Run.Reasons, "; "), o.cellCommand(mc))
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
func truthZooKeeper(t *testing.T, want bool) *workload.ZooKeeper {
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

// TestMatrixCommand runs one row of the matrix through the CLI: the table
// names expected and measured verdicts, result.json holds the cells, and
// --junit has one test case per cell.
func TestMatrixCommand(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	code, out, errOut := lockbench(t, "matrix", "--impl=atomic", "--seed=3", "--out="+dir, "--junit="+junit)
	if code != 0 {
		t.Fatalf("matrix --impl=atomic: exit %d, want 0 (every cell as expected)\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"atomic/none", "atomic/server-pause", "atomic/latency", "3 cells, 3 as expected, 0 differ"} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix output lacks %q:\n%s", want, out)
		}
	}
	res, err := reports.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matrix) != 3 || res.Matrix[1].Cell != "atomic/server-pause" || res.Matrix[1].Expected != "safe" ||
		!res.Matrix[1].Match || len(res.Matrix[1].Run.Faults) != 1 {
		t.Errorf("result.json matrix = %+v", res.Matrix)
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(x), "<testcase "); n != 3 || !strings.Contains(string(x), `name="atomic/server-pause"`) || strings.Contains(string(x), "<failure") {
		t.Errorf("junit has %d cases (want 3, none failed):\n%s", n, x)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `<tr class="row pass">`); !strings.Contains(string(page), "Truth table") || n != 3 {
		t.Errorf("report.html draws %d cells of the truth table, want 3", n)
	}
}

// TestCellWhoseFaultNeverFiredDoesNotMatch: a cell whose fault never
// struck tested nothing, so it must not pass as its expected verdict.
// atomic has no lock holder, so pause-holder has nowhere to strike.
func TestCellWhoseFaultNeverFiredDoesNotMatch(t *testing.T) {
	var o runOpts
	fs := matrixFlags(&o)
	if err := fs.Parse([]string{"--clients=200", "--stock=100", "--seed=1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.validate(fs); err != nil {
		t.Fatal(err)
	}
	cell := faults.Cell{Impl: "atomic", Fault: "pause-holder", Want: faults.Safe}
	mc, err := o.runCell(t.Context(), cell, newBackend(t, "embedded"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(mc.Run.Faults); got != 0 {
		t.Fatalf("pause-holder struck atomic %d times; the test needs a fault with no window", got)
	}
	if mc.Match || mc.Measured != notFired {
		t.Errorf("cell %s: match %v, measured %q; want no match, measured %q", mc.Cell, mc.Match, mc.Measured, notFired)
	}
}
