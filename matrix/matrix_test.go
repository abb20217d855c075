package matrix_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/mysqltest"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/internal/zktest"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// truthSeeds is how many seeds each cell runs: every cell that must fail
// fails in each of failSeeds seeds; every cell that must stay clean stays
// clean in each of safeSeeds. LOCKBENCH_TRUTH_SEEDS=f,s changes them: more
// for a soak; CI runs 5,10 (.ci/run), as the cells that must stay clean
// made half the table's time at twenty seeds (77 cells, 2,695 of 5,200
// cell-seconds on the redis, sentinel and process kinds, load 8-14), which
// kept CI past its half hour.
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
		// A subtest of its own, so that the skip shows in the list.
		t.Run("redis", func(t *testing.T) {
			t.Skip("redis-server not on PATH: real-Redis rows skipped (LOCKBENCH_REQUIRE_REDIS=1 makes this fatal)")
		})
	}
	if os.Getenv(redistest.RequireSentinelEnv) == "1" || redistest.SentinelAvailable() {
		kinds = append(kinds, "sentinel")
	} else {
		// A subtest of its own, so that the skip shows in the list.
		t.Run("sentinel", func(t *testing.T) {
			t.Skip("redis-sentinel not on PATH: the failover rows skipped (LOCKBENCH_REQUIRE_SENTINEL=1 makes this fatal)")
		})
	}
	// The cells of the faults that stop or kill a node, with every node
	// a process of its own (SIGSTOP, SIGKILL).
	kinds = append(kinds, "process")
	chosen, err := chosenKinds()
	if err != nil {
		t.Fatal(err)
	}
	if chosen == nil {
		return kinds
	}
	for _, k := range chosen {
		if k == "sentinel" && !slices.Contains(kinds, "sentinel") {
			t.Fatalf("%s: redis-sentinel is not on PATH", truthKindsEnv)
		}
		if k == "redis" && !slices.Contains(kinds, "redis") {
			t.Fatalf("%s: redis-server is not on PATH", truthKindsEnv)
		}
	}
	return chosen
}

// truthKindsEnv names the kinds the truth table runs on, when set.
const truthKindsEnv = "LOCKBENCH_TRUTH_KINDS"

// chosenKinds are the kinds LOCKBENCH_TRUTH_KINDS names, nil when it is
// not set.
func chosenKinds() ([]string, error) {
	v := os.Getenv(truthKindsEnv)
	if v == "" {
		return nil, nil
	}
	var out []string
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if _, ok := kindSlots[k]; !ok {
			return nil, fmt.Errorf("%s=%q: want embedded, redis, sentinel, process or several, comma separated", truthKindsEnv, v)
		}
		out = append(out, k)
	}
	return out, nil
}

// kindSlots is how many of a kind's Redis cells may run at once. The
// embedded server runs in this process and spends a processor's worth on
// the spinning locks of a few cells: more cells at once would starve lock
// holders past their lease and turn load into false alarms. A real
// server takes more.
var kindSlots = map[string]int{"embedded": 2, "redis": 3, "sentinel": 2, "process": 2}

// otherSlots is how many cells whose lock or inventory lives in
// ZooKeeper, MySQL, etcd or PostgreSQL may run at once, beside the Redis
// cells: they wait on those servers, not on this process.
const otherSlots = 3

// runningCells is how many cells run at once, whatever their slots: what
// two cores take before the harnesses saturate, each cell's neighbours
// being other processes to it. Measured with nine at once (every slot
// of the redis, sentinel and process kinds): load 10, and one cell's 15
// seeds all inconclusive, saturated.
const runningCells = 4

// truthParallel is how many tests go test runs at once in this package:
// every cell of every kind, so that the slots alone (kindSlots,
// otherSlots, runningCells) bound how many run. A cell waiting for its
// slot holds one of go test's, and with fewer, the cells of the kind
// that reached t.Parallel first took them all while the other kinds
// waited behind them: with four, the process kind's cells began 24
// minutes into a 31-minute run of the table, on a machine 30% idle.
func truthParallel() int {
	return len(matrix.Truth()) * len(kindSlots)
}

// processFaults are the faults whose cells the process kind runs: those
// that stop a node (SIGSTOP of its process) or kill it (SIGKILL).
var processFaults = []string{"pause-holder", "crash-holder", "crash-after-setnx"}

// processCell reports whether the process kind runs c: a fault that
// stops or kills a node, on a sale nodes in processes can run.
func processCell(c matrix.Cell, im harness.Impl) bool {
	return slices.Contains(processFaults, c.Fault) && workload.SupportsNodes("process", im.Name, im.Sale, nil) == nil
}

// notOnProcesses are the process kind's cells it does not run, and why.
var notOnProcesses = map[string]string{
	"fair/pause-holder": "fair's overlap under pause-holder shows in most runs with nodes in goroutines, where it is judged; with every node a process, SIGSTOP stops the paused node's waiters too, and the head of the lock's queue is often one of them: it showed at load 1-2.5, but nobody entered during any pause in 18 of 18 sales at load 7-9 (seeds 1-15 of the table, 1-3 again by hand; each pause lasting its full 2 s), a busy CI runner's load",
}

// processSeeds bounds the seeds of a process cell: each sale starts its
// nodes' processes, and the in-process kinds have run the same cells
// over every seed already.
const processSeeds = 5

// startedSeeds bounds the seeds of a cell on the etcd cluster or the
// PostgreSQL server lockbench starts for it: five, as the cells were
// measured over when they were added. A sale there waits on
// three etcd members or a PostgreSQL server beside the harness, and at
// twenty seeds their cells alone would take CI past its half hour.
const startedSeeds = 5

// serverFault reports whether a cell's fault acts on the server itself,
// so that the cell needs a server of its own.
func serverFault(c matrix.Cell) bool {
	return c.Fault == "server-pause" || c.Fault == "restart"
}

// TestTruthTable runs the catalog's truth table (docs/catalog.md) as
// `lockbench matrix` does, through the public packages, on the embedded
// server and on a real redis-server, over many seeds: a harness that
// misses a seeded bug, or raises a false alarm on a safe lock, is
// worthless.
func TestTruthTable(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the truth table takes minutes")
	}
	failSeeds, safeSeeds := truthSeeds(t)
	kinds := truthKinds(t)
	// The cells whose lock or inventory lives in ZooKeeper or MySQL run
	// once, under the last kind: those servers are the same for both.
	serversKind := kinds[len(kinds)-1]
	if k := slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == "sentinel" || k == "process" }); len(k) > 0 {
		serversKind = k[len(k)-1]
	}
	// The cells whose lock or inventory lives in ZooKeeper or MySQL wait on
	// those servers, not on this process: they take slots of their own,
	// beside the Redis cells.
	otherServers := make(chan struct{}, otherSlots)
	running := make(chan struct{}, runningCells)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			// The two kinds run side by side: a cell spends most of its
			// time waiting (arrivals, leases, pauses), not computing.
			t.Parallel()
			redisSlots := make(chan struct{}, kindSlots[kind])
			var shared string // the redis-server the cells share, with prefixes of their own
			if kind == "redis" || kind == "process" && redistest.Available() {
				shared = redistest.Start(t)
			}
			zk := truthZooKeeper(t, kind == serversKind || kind == "process")
			for i, cell := range matrix.Truth() {
				t.Run(cell.Name(), func(t *testing.T) {
					im, ok := harness.Lookup(cell.Impl)
					if !ok {
						t.Fatalf("no implementation %s", cell.Impl)
					}
					needs := im.Needs()
					mysqlCell := needs.Has(servers.KindMySQL)
					zkCell := needs.Has(servers.KindZooKeeper)
					// etcd and PostgreSQL: lockbench starts them, a cluster or a
					// server per cell (backends.Open), so that a server fault
					// stops no other cell's.
					startedCell := needs.Has(servers.KindEtcd) || needs.Has(servers.KindPostgres)
					if kind == "process" {
						if !processCell(cell, im) {
							t.Skip("the process kind runs the cells of the faults that stop or kill a node, on sales nodes in processes can run")
						}
						if why, ok := notOnProcesses[cell.Name()]; ok {
							t.Skip(why)
						}
					} else if (zkCell || mysqlCell || startedCell) && kind != serversKind {
						t.Skipf("the cell's server is the same for every kind: it runs once, under %s", serversKind)
					}
					if zkCell && zk == "" {
						t.Skipf("no ZooKeeper: apt-get install zookeeperd (%s=1 makes its absence fatal)", zktest.RequireEnv)
					}
					if needs.Has(servers.KindEtcd) {
						servertest.Etcd.Need(t)
					}
					if needs.Has(servers.KindPostgres) {
						servertest.Postgres.Need(t)
					}
					if sentinelCell(cell) != (kind == "sentinel") {
						t.Skip("the failover cells run under the sentinel kind only, the others under every other kind")
					}
					t.Parallel()
					queued := time.Now()
					slots := redisSlots
					if mysqlCell || zkCell || startedCell {
						slots = otherServers
					}
					slots <- struct{}{}
					defer func() { <-slots }()
					running <- struct{}{}
					defer func() { <-running }()
					began := time.Now()
					defer func() {
						// What CI's time is made of (go test -json keeps it).
						t.Logf("ran %.1fs after %.1fs waiting for a slot", time.Since(began).Seconds(), began.Sub(queued).Seconds())
					}()
					if kind == "redis" && multiServer(cell) && cell.Fault == "restart" {
						t.Skip("lockbench cannot restart redis-servers it reaches by address")
					}
					o := backends.Options{Addrs: map[servers.Kind]string{servers.KindZooKeeper: zk}}
					switch {
					case kind == "sentinel":
						// Every cell its own primary, replica and Sentinels:
						// a failover leaves the topology changed.
						o.Backend = backends.BackendSentinel
					case startedCell:
						// The cell's etcd or PostgreSQL, started by backends.Open;
						// a lock in etcd keeps its inventory in an embedded Redis.
					case mysqlCell:
						o.Addrs[servers.KindMySQL] = mysqltest.Start(t).DatabaseDSN(t, fmt.Sprintf("lbtruth_%d", i))
					case kind == "embedded", kind == "process" && shared == "":
						// Every cell its own embedded server (five for a lock
						// on several, backends.RedlockServers).
					case multiServer(cell):
						o.Backend, o.Redis = backends.BackendRedis, []string{redistest.Start(t), redistest.Start(t), redistest.Start(t)}
					case serverFault(cell):
						o.Backend, o.Redis = backends.BackendRedis, []string{redistest.Start(t)}
					default:
						o.Backend, o.Redis = backends.BackendRedis, []string{shared}
					}
					sv := open(t, o, needs)
					base := harness.Plan{Workload: matrix.Defaults()}
					n := safeSeeds
					if cell.Want.Breaks() && !cell.Want.Sometimes {
						n = failSeeds
					}
					if startedCell {
						n = min(n, startedSeeds)
					}
					switch kind {
					case "sentinel":
						n = min(n, failoverSeeds)
					case "process":
						n = min(n, processSeeds)
						l, err := harness.NodeProcesses(base.Workload.Nodes)
						if err != nil {
							t.Fatal(err)
						}
						base.Nodes.Launcher = l
					}
					// Seeds run until n of them are judged, 3n at most: a
					// seed that missed while the harness was saturated says
					// nothing of the lock, and another takes its place.
					seen := 0     // runs that showed a racy cell's failure
					judged := 0   // seeds judged
					unjudged := 0 // seeds that missed while saturated
					for seed := uint64(1); judged < n && seed <= uint64(3*n); seed++ {
						base.Seed = seed
						// A prefix per seed: a command the last sale timed
						// out on (an unknown outcome) may still land after
						// that sale cleared its keys, on a busy machine.
						base.Workload.Prefix = fmt.Sprintf("lockbench-test:%d:%d:", i, seed)
						mc, err := matrix.RunCell(t.Context(), sv, cell, matrix.Options{Base: base})
						if err != nil {
							t.Fatalf("seed %d: %v", seed, err)
						}
						if cell.Want.Sometimes {
							switch {
							case cell.Want.Meets(&mc.Run):
								seen++
								judged++
							case matrix.Saturated(&mc.Run):
								t.Logf("seed %d: did not show %s while the harness was saturated (%s): not judged", seed, cell.Want.Label, strings.Join(mc.Run.Saturation, "; "))
								unjudged++
							default:
								judged++
							}
							continue
						}
						if mc.Inconclusive {
							// Missed in every try while the harness was
							// saturated: the machine's verdict, not the
							// lock's.
							t.Logf("seed %d: inconclusive in %d tries (harness saturated: %s)", seed, mc.Tries, strings.Join(mc.Run.Saturation, "; "))
							unjudged++
							continue
						}
						judged++
						if !mc.Match {
							t.Errorf("seed %d: expected %s, measured %s (sold %d/%d, oversold %d, overlaps %d, linearizability %s, faults fired %d)\n  reasons: %s\n  reproduce: %s",
								seed, mc.Expected, mc.Measured, mc.Run.Sold, mc.Run.Stock, mc.Run.Oversold, mc.Run.Lock.Overlaps,
								mc.Run.Linearizability.Status, len(mc.Run.Faults), strings.Join(mc.Run.Reasons, "; "),
								harness.CommandLine("lockbench", append(cell.Flags(matrix.Defaults(), mc.Fault), kindFlags(kind)...), seed))
						}
					}
					if judged == 0 {
						// Not one seed judged: the cell proved nothing here,
						// and a lock it must catch would pass unseen.
						t.Errorf("%s: every one of %d seeds inconclusive (the harness saturated): the cell was never judged", cell.Name(), unjudged)
					}
					if cell.Want.Sometimes && seen == 0 && judged > 0 {
						t.Errorf("%s: no run in %d seeds showed %s (%d more not judged, the harness saturated)", cell.Name(), judged, cell.Want.Label, unjudged)
					}
					t.Logf("%d seeds judged, %d not", judged, unjudged)
				})
			}
		})
	}
}

// kindFlags are the flags a kind adds to a cell's reproduce line.
func kindFlags(kind string) [][2]string {
	if kind == "process" {
		return [][2]string{{"node-mode", "process"}}
	}
	return nil
}

// truthZooKeeper starts the ZooKeeper of the truth table's ZooKeeper
// cells, under one kind only (the inventory's server makes no
// difference to them), and returns its address, or "" without one.
func truthZooKeeper(t *testing.T, want bool) string {
	t.Helper()
	if !want || !zktest.Available() && os.Getenv(zktest.RequireEnv) != "1" {
		return ""
	}
	return zktest.Start(t)
}

// open opens the servers of needs as o says, through backends as the
// CLI does, until the test ends.
//
// Servers that lockbench starts (a Sentinel topology, etcd, PostgreSQL)
// and that did not come up are started once more: a start is not the
// lock's verdict, and a busy machine can slow one past its bound (a
// Sentinel topology whose Sentinels had not all met within 30 s, once).
func open(t *testing.T, o backends.Options, needs servers.Needs) *servers.Set {
	t.Helper()
	s, err := backends.Open(t.Context(), o, needs)
	if errors.Is(err, servers.ErrUnreachable) && t.Context().Err() == nil {
		t.Logf("servers did not start, starting them once more: %v", err)
		s, err = backends.Open(t.Context(), o, needs)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &s.Set
}

// embedded is an embedded Redis of the test's own.
func embedded(t *testing.T) *servers.Set {
	return open(t, backends.Options{}, servers.Needs{servers.KindRedis})
}

// multiServer reports whether a cell's implementation runs on several
// servers.
func multiServer(c matrix.Cell) bool { return c.Impl == "redlock" }

// TestCellWhoseFaultNeverFiredDoesNotMatch: a cell whose fault never
// struck tested nothing, so it must not pass as its expected verdict.
// atomic has no lock holder, so pause-holder has nowhere to strike.
func TestCellWhoseFaultNeverFiredDoesNotMatch(t *testing.T) {
	w := matrix.Defaults()
	w.Clients, w.Stock = 200, 100
	cell := matrix.Cell{Impl: "atomic", Fault: "pause-holder", Want: matrix.Safe}
	sv := embedded(t)
	mc, err := matrix.RunCell(t.Context(), sv, cell, matrix.Options{Base: harness.Plan{Workload: w, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(mc.Run.Faults); got != 0 {
		t.Fatalf("pause-holder struck atomic %d times; the test needs a fault with no window", got)
	}
	if mc.Match || mc.Measured != matrix.NotFired {
		t.Errorf("cell %s: match %v, measured %q; want no match, measured %q", mc.Cell, mc.Match, mc.Measured, matrix.NotFired)
	}
}

// unpausable hides the Pause and Restart of the backend it wraps: a
// server lockbench cannot pause.
type unpausable struct{ servers.Backend }

// TestRunSkipsWhatTheServersCannotTake: a cell whose fault the servers
// cannot take is skipped and named, never run, never judged.
func TestRunSkipsWhatTheServersCannotTake(t *testing.T) {
	cells := []matrix.Cell{{Impl: "atomic", Fault: "server-pause", Want: matrix.Safe}, {Impl: "atomic", Want: matrix.Safe}}
	sv := *embedded(t)
	sv.Redis = unpausable{sv.Redis}
	w := matrix.Defaults()
	w.Clients, w.Stock = 100, 50
	res, err := matrix.Run(t.Context(), &sv, cells, matrix.Options{Base: harness.Plan{Workload: w, Seed: 1}})
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
// TestTruthIsACopy: the truth table cannot be changed from outside.
func TestTruthIsACopy(t *testing.T) {
	table := matrix.Truth()
	first := table[0]
	table[0] = matrix.Cell{Impl: "changed"}
	if got := matrix.Truth()[0]; got.Impl != first.Impl {
		t.Errorf("changing Truth's slice changed the table: first cell %s", got.Impl)
	}
}

func TestSweepMatch(t *testing.T) {
	hit, miss, none := matrix.SweepRun{Struck: true, Meets: true}, matrix.SweepRun{Struck: true}, matrix.SweepRun{}
	tests := []struct {
		name string
		want matrix.Expect
		runs []matrix.SweepRun
		ok   bool
	}{
		{"breaks at one value", matrix.OverlapOversell, []matrix.SweepRun{miss, miss, hit}, true},
		{"never breaks", matrix.OverlapOversell, []matrix.SweepRun{miss, miss, miss}, false},
		{"safe everywhere", matrix.Safe, []matrix.SweepRun{hit, hit, hit}, true},
		{"a false alarm at one value", matrix.Safe, []matrix.SweepRun{hit, miss, hit}, false},
		{"values that never fired count for nothing", matrix.Safe, []matrix.SweepRun{none, hit}, true},
		{"a breaking value that never fired", matrix.OverlapOversell, []matrix.SweepRun{miss, none}, false},
		{"nothing fired", matrix.Safe, []matrix.SweepRun{none, none}, false},
		{"sometimes", matrix.Racy, []matrix.SweepRun{miss, miss}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matrix.SweepMatch(tt.want, tt.runs); got != tt.ok {
				t.Errorf("SweepMatch = %v, want %v", got, tt.ok)
			}
		})
	}
}

// TestRowsOfRegisteredImplementations: an implementation a user
// registered is judged by the row matrix.AddRow gave it, or, without one, run
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
	if err := matrix.AddRow(matrix.Cell{Impl: "test-with-row", Want: matrix.Safe}, matrix.Cell{Impl: "test-with-row", Fault: "expire", Want: matrix.Overlap}); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		row  []matrix.Cell
		want error
	}{
		{"a built-in implementation", []matrix.Cell{{Impl: "lua", Want: matrix.Safe}}, matrix.ErrNoCell},
		{"an unknown fault", []matrix.Cell{{Impl: "test-with-row", Fault: "no-such-fault"}}, matrix.ErrUnknownFault},
		{"no implementation", []matrix.Cell{{Want: matrix.Safe}}, matrix.ErrNoCell},
		{"an implementation not registered", []matrix.Cell{{Impl: "test-never-registered", Want: matrix.Safe}}, matrix.ErrUnknownImpl},
		{"a cell added before", []matrix.Cell{{Impl: "test-with-row", Want: matrix.Safe}}, matrix.ErrDuplicate},
		{"a cell twice", []matrix.Cell{{Impl: "test-without-row", Fault: "expire"}, {Impl: "test-without-row", Fault: "expire"}}, matrix.ErrDuplicate},
	}
	for _, tt := range bad {
		if err := matrix.AddRow(tt.row...); !errors.Is(err, tt.want) {
			t.Errorf("AddRow of %s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, ok := matrix.Lookup("test-never-registered/none"); ok {
		t.Error("a refused row left its cell in the table")
	}
	with, _ := harness.Lookup("test-with-row")
	without, _ := harness.Lookup("test-without-row")
	cells, err := matrix.Select([]harness.Impl{with, without}, "")
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
	if len(got) < 5 || !slices.Contains(got, "test-without-row/pause-holder "+matrix.MeasuredOnly.Label) {
		t.Errorf("row measured only: %q", got)
	}
	w := matrix.Defaults()
	w.Clients, w.Stock = 100, 50
	sv := embedded(t)
	mc, err := matrix.RunCell(t.Context(), sv, matrix.Cell{Impl: "test-without-row", Fault: "pause-holder", Want: matrix.MeasuredOnly}, matrix.Options{Base: harness.Plan{Workload: w, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !mc.Match || mc.Measured == matrix.NotFired || mc.Expected != matrix.MeasuredOnly.Label {
		t.Errorf("measured-only cell: match %v, measured %q, expected %q", mc.Match, mc.Measured, mc.Expected)
	}
}
