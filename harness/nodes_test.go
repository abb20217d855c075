package harness

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/internal/cpushare"
	"github.com/lockbench/lockbench/internal/ctxtime"
	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/redistest"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/nodeproto"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// TestMain serves a node when the test binary is started as one: the
// process-mode tests launch this binary as their nodes, which know the
// tests' own implementations too.
func TestMain(m *testing.M) {
	if err := Register(Lock(lateReport())); err != nil {
		panic(err)
	}
	if IsNode(os.Args[1:]) {
		os.Exit(NodeMain(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// processPlan is a small sale of impl on nodes in processes of their own.
func processPlan(t *testing.T, impl string, clients int) Plan {
	t.Helper()
	im, ok := Lookup(impl)
	if !ok {
		t.Fatalf("no %s", impl)
	}
	l, err := NodeProcesses(2)
	if err != nil {
		t.Fatal(err)
	}
	w := Defaults()
	w.Clients, w.Stock, w.Nodes, w.Workers, w.Ramp, w.Timeout = clients, int64(clients/4), 2, 50, 200*time.Millisecond, time.Minute
	return Plan{Impl: im, Workload: w, Seed: 1, Nodes: Nodes{Launcher: l}}
}

func TestProcessNodesSmoke(t *testing.T) {
	s, err := backends.Open(t.Context(), backends.Options{Backend: backends.BackendEmbedded}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	plan := processPlan(t, "watchdog", 400)
	res, err := Run(ctx, &s.Set, plan)
	if err != nil {
		t.Fatal(err)
	}
	run, h := reports.NewRun(res.History, res.Report, res.NotFired...), res.History
	if run.Verdict != reports.Pass {
		t.Fatalf("watchdog on process nodes failed: %+v", run.Reasons)
	}
	// Without faults each node kept its own buyers' schedule: every
	// buyer came, on its node, and began no earlier than the arrival the
	// plan gives it (both clocks are the machine's one monotonic clock).
	arrivals := plan.Workload.Arrivals()
	nodes := map[int16]int{}
	buyers := map[int32]bool{}
	for _, op := range h.Ops {
		nodes[op.Node]++
		if op.Outcome == history.Pending {
			t.Fatalf("pending op %+v", op)
		}
		buyers[op.Client] = true
		if int(op.Node) != int(op.Client)%h.Header.Nodes {
			t.Fatalf("buyer %d on node %d", op.Client, op.Node)
		}
		if want := int64(arrivals.At(int(op.Client), plan.Workload.Clients)); op.Attempt == 0 && (op.Arrival != want || op.Start < op.Arrival) {
			t.Fatalf("buyer %d arrived at %d ns and began at %d, its schedule says %d: %+v", op.Client, op.Arrival, op.Start, want, op)
		}
	}
	if len(buyers) != plan.Workload.Clients {
		t.Fatalf("%d buyers in the history, want %d", len(buyers), plan.Workload.Clients)
	}
	t.Logf("ops per node %v, sold %d", nodes, run.Data.Sold)
	// Each node process measured its own health and sent it at its end.
	if run.Health == nil || len(run.Health.Nodes) != h.Header.Nodes {
		t.Fatalf("health %+v: want one part per node (%d)", run.Health, h.Header.Nodes)
	}
	for i, nh := range run.Health.Nodes {
		if nh.Node != i || nh.Elapsed <= 0 || nh.CPUs < 1 {
			t.Errorf("node %d's health %+v", i, nh)
		}
		if nh.StallMax > run.Health.StallMax || nh.CPUWait > run.Health.CPUWait || nh.LagMax > run.Health.LagMax {
			t.Errorf("node %d's health %+v is worse than the run's %+v", i, nh, run.Health)
		}
		// The node handed its buyers to itself, and measured how late.
		if nh.LagMax <= 0 {
			t.Errorf("node %d measured no arrival lag (%d ns): it handed out no buyer", i, nh.LagMax)
		}
	}
}

// pauser is an injector that stops node 0 once, from the middle of the
// sale, for a while, and records the window it was surely stopped in:
// from after PauseNode returned (the process is stopped by then) to
// before ResumeNode (it is not let go before).
type pauser struct {
	from, to int64
	done     chan struct{}
}

func (p *pauser) Probe(context.Context, *workload.Controls, workload.Site) error { return nil }

func (p *pauser) Run(ctx context.Context, c *workload.Controls) {
	defer close(p.done)
	if ctxtime.Sleep(ctx, 150*time.Millisecond) != nil {
		return
	}
	c.PauseNode(0, time.Hour)
	p.from = c.Now()
	ctxtime.Sleep(ctx, 300*time.Millisecond)
	p.to = c.Now()
	c.ResumeNode(0)
}

// TestProcessPauseMakesNoCalls: a node whose process is stopped records
// nothing while it is, though the other node sells on; both clocks are
// the machine's one monotonic clock, read in each node's own process.
func TestProcessPauseMakesNoCalls(t *testing.T) {
	s, err := backends.Open(t.Context(), backends.Options{Backend: backends.BackendEmbedded}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// No lock: the other node sells on whatever the stopped one held.
	plan := processPlan(t, "atomic", 2000)
	plan.Workload.Ramp = time.Second
	p := &pauser{done: make(chan struct{})}
	im := plan.Impl
	cfg := workload.Config{Name: im.Name, Sale: im.Sale, Servers: &s.Set, Workload: plan.Workload, Launcher: plan.Nodes.Launcher, Injector: p}
	h, err := workload.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	<-p.done
	if p.from == 0 || p.to == 0 {
		t.Fatal("the pause never happened")
	}
	var inside [2]int
	var before, after bool
	for _, op := range h.Ops {
		for _, at := range []int64{op.Start, op.AcquireCall, op.Acquired, op.ReadCall, op.ReadReturn, op.WriteCall, op.WriteReturn, op.ReleaseCall, op.Released, op.End} {
			if at == 0 {
				continue
			}
			if at > p.from && at < p.to {
				inside[op.Node]++
			}
			if op.Node == 0 {
				before = before || at < p.from
				after = after || at > p.to
			}
		}
	}
	if inside[0] != 0 {
		t.Errorf("node 0 recorded %d instants while its process was stopped (%v to %v)", inside[0], time.Duration(p.from), time.Duration(p.to))
	}
	if inside[1] == 0 || !before || !after {
		t.Errorf("the sale did not run around the pause: node 1 recorded %d instants in it, node 0 before %v, after %v", inside[1], before, after)
	}
}

// TestRemoteClockError runs nodes started by hand, as a Kubernetes Job
// starts its pods, that dial the coordinator; node 1 records every
// instant 20 ms late, an error its measured offset cannot see. With a
// clock error of 25 ms declared, the safe lock passes; with only the
// measured bound (well under a millisecond on loopback), the same run
// shows overlaps that never happened: why the widening is needed.
func TestRemoteClockError(t *testing.T) {
	s, err := backends.Open(t.Context(), backends.Options{Backend: backends.BackendEmbedded}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		name     string
		declared time.Duration
		overlaps bool
	}{
		{"measured bound only", 0, true},
		{"declared 25ms", 25 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port, err := loopback.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			addr := "127.0.0.1:" + strconv.Itoa(port)
			plan := processPlan(t, "lua", 1000)
			plan.Workload.Hold = time.Millisecond
			secret := nodeproto.NewSecret()
			plan.Nodes = Nodes{Launcher: workload.Remote{}, Listen: addr, Secret: secret, ClockError: tt.declared}
			for i := range 2 {
				args := []string{"node", "--coordinator=" + addr, "--index=" + strconv.Itoa(i)}
				if i == 1 {
					args = append(args, "--clock-shift=20ms")
				}
				cmd := exec.Command(os.Args[0], args...)
				cmd.Env = append(os.Environ(), nodeproto.SecretEnv+"="+secret)
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			}
			res, err := Run(t.Context(), &s.Set, plan)
			if err != nil {
				t.Fatal(err)
			}
			run, h := reports.NewRun(res.History, res.Report, res.NotFired...), res.History
			if h.Header.ClockError < int64(tt.declared) || h.Header.ClockError <= 0 {
				t.Fatalf("clock error %v, want at least the declared %v and more than nothing (measured)", time.Duration(h.Header.ClockError), tt.declared)
			}
			t.Logf("clock error %v, %d overlaps, verdict %s", time.Duration(h.Header.ClockError), run.Lock.Overlaps, run.Verdict)
			if got := run.Lock.Overlaps > 0; got != tt.overlaps {
				t.Errorf("overlaps %d with clock error %v; want overlaps %v", run.Lock.Overlaps, time.Duration(h.Header.ClockError), tt.overlaps)
			}
			if !tt.overlaps && run.Verdict != reports.Pass {
				t.Errorf("verdict %s with the clock error declared: %v", run.Verdict, run.Reasons)
			}
		})
	}
}

// TestProcessPauseIsNoStall: pause-holder stops the holder's node process
// (SIGSTOP) for as long as its pause; the node's monitor wakes that late,
// but the stop is the fault's, not the harness standing still, and the
// coordinator takes it out of the node's health. So the run's health
// carries no stall as long as half the shortest pause, and its saturation
// says nothing of standing still. A real stall is still reported (see
// history's TestDiscount): one the machine made beside the stops, as a
// CPU hog can, stays in the health, and the run is then not judged here.
func TestProcessPauseIsNoStall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a sale of pause-holder on process nodes, and the check of its broken history")
	}
	addr := redistest.Start(t)
	s, err := backends.Open(t.Context(), backends.Options{Backend: backends.BackendRedis, Redis: []string{addr}}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := processPlan(t, "lua", 400)
	plan.Workload.Stock, plan.Workload.Workers, plan.Workload.Ramp = 300, 20, 500*time.Millisecond
	if plan.Faults, err = faults.Parse("pause-holder"); err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), &s.Set, plan)
	if err != nil {
		t.Fatal(err)
	}
	run, h := reports.NewRun(res.History, res.Report, res.NotFired...), res.History
	var shortest int64
	for _, f := range h.Faults {
		if f.Name == "pause-holder" && f.End > f.Start && (shortest == 0 || f.End-f.Start < shortest) {
			shortest = f.End - f.Start
		}
	}
	if shortest == 0 {
		t.Fatalf("pause-holder never paused a node: faults %+v, not fired %v", h.Faults, res.NotFired)
	}
	bound := shortest / 2
	hl := run.Health
	if hl == nil || len(hl.Nodes) != h.Header.Nodes {
		t.Fatalf("health %+v: want one part per node (%d)", hl, h.Header.Nodes)
	}
	// A node process would count the coordinator and its sibling as other
	// processes: it leaves that figure to the coordinator, which leaves
	// the nodes out of it.
	for i, n := range hl.Nodes {
		if n.Others != -1 {
			t.Errorf("node %d measured %v other processes' tasks, want -1 (the coordinator's figure)", i, n.Others)
		}
	}
	t.Logf("shortest pause %v; stall max %v (nodes %v, %v)", time.Duration(shortest), time.Duration(hl.StallMax), time.Duration(hl.Nodes[0].StallMax), time.Duration(hl.Nodes[1].StallMax))
	if hl.StallMax < bound {
		for _, s := range run.Saturation {
			if strings.Contains(s, "stood still") {
				t.Errorf("saturation %q with a stall max of %v", s, time.Duration(hl.StallMax))
			}
		}
		return
	}
	// A stall this long is left: either a stop was not taken out (a
	// starved span left over most of a pause), or the machine stalled the
	// harness beside the stops, which this test cannot tell from a lock.
	for _, f := range h.Faults {
		if f.Name != "pause-holder" || f.Node < 0 || f.Node >= len(hl.Nodes) {
			continue
		}
		for _, sp := range hl.Nodes[f.Node].Starved {
			if min(sp.To, f.End)-max(sp.From, f.Start) >= (f.End-f.Start)/2 {
				t.Fatalf("node %d's starved span %v-%v covers most of its pause %v-%v: the stop was not taken out", f.Node, time.Duration(sp.From), time.Duration(sp.To), time.Duration(f.Start), time.Duration(f.End))
			}
		}
	}
	for _, sp := range hl.Starved {
		if sp.To-sp.From >= bound {
			t.Skipf("the machine stalled the harness for %v beside the pauses (span %v-%v, load %v others): a real stall, not judged", time.Duration(sp.To-sp.From), time.Duration(sp.From), time.Duration(sp.To), hl.Others)
		}
	}
	t.Fatalf("stall max %v, over half the shortest pause (%v), and no starved span left that long: %+v", time.Duration(hl.StallMax), time.Duration(shortest), hl)
}

// lateReport is watchdog (whose release reports nothing before it is
// done) with a release that returns lateBy after the lock is given up on
// the server: a buyer that released is still to report it, a window in
// which a kill of its node loses the report.
func lateReport() locks.Impl {
	im, ok := locks.Lookup("watchdog")
	if !ok {
		panic("no watchdog")
	}
	inner := im.New
	im.Name = "test-watchdog-late-report"
	im.New = func(ctx context.Context, env locks.Env) (locks.Locker, error) {
		l, err := inner(ctx, env)
		if err != nil {
			return nil, err
		}
		return lateLocker{l}, nil
	}
	return im
}

// lateBy is how late lateReport's releases return.
const lateBy = 50 * time.Millisecond

type lateLocker struct{ locks.Locker }

func (l lateLocker) Acquire(ctx context.Context, owner string) (locks.Lease, error) {
	lease, err := l.Locker.Acquire(ctx, owner)
	if err != nil {
		return nil, err
	}
	return lateLease{lease}, nil
}

type lateLease struct{ locks.Lease }

func (l lateLease) Release(ctx context.Context) error {
	err := l.Lease.Release(ctx)
	time.Sleep(lateBy)
	return err
}

// TestProcessKillSparesReleased: when crash-holder kills a node process,
// a buyer of that node that had released its lock but not yet reported
// it is not held to hold the lock until the kill: what it did after its
// last probe was answered is unknown. With every release reported 50 ms
// late, the history counted such buyers as holders until the kill, and
// another node's buyer, rightly granted the freed lock, as an overlap
// during a live lease: a false alarm on a correct lock (seen once in CI,
// on multi).
func TestProcessKillSparesReleased(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a sale of crash-holder on process nodes")
	}
	s, err := backends.Open(t.Context(), backends.Options{Backend: backends.BackendEmbedded}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := processPlan(t, "test-watchdog-late-report", 400)
	plan.Workload.Stock, plan.Workload.Workers, plan.Workload.Ramp, plan.Workload.TTL = 300, 20, 500*time.Millisecond, time.Second
	// Armed at 100-200 ms (seed 1: 200 ms), well inside the ramp, so that
	// node 0 has a holder to crash however fast the nodes keep up with
	// the arrivals (at after=250ms it armed at 499 ms, and faster nodes
	// had sold to the last arrival by then).
	if plan.Faults, err = faults.Parse("crash-holder:node=0:after=100ms"); err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), &s.Set, plan)
	if err != nil {
		t.Fatal(err)
	}
	crashes := 0
	for _, f := range res.History.Faults {
		if f.Name == "crash-holder" {
			crashes++
		}
	}
	if crashes == 0 {
		t.Fatalf("crash-holder never fired: not fired %v", res.NotFired)
	}
	if res.Report.Lock.Overlaps > 0 {
		t.Errorf("a correct lock whose releases are reported late: %d overlaps after a crash; reasons %q", res.Report.Lock.Overlaps, res.Report.Reasons)
	}
}

// TestNodeShare: a sale's node processes are given their share of the
// CPUs; a node refuses a share that is not a count of its CPUs, naming
// the variable, before it dials anyone.
func TestNodeShare(t *testing.T) {
	if why := cpushare.Unshared(); why != "" {
		t.Skip(why)
	}
	all := runtime.GOMAXPROCS(0)
	l, err := NodeProcesses(2)
	if err != nil {
		t.Fatal(err)
	}
	if l.Share != all/2 {
		t.Errorf("node processes' share %d CPUs, want %d", l.Share, all/2)
	}
	for _, v := range []string{"0", "all", strconv.Itoa(all)} {
		// NodeMain takes both variables out of its environment.
		t.Setenv(nodeproto.SecretEnv, nodeproto.NewSecret())
		t.Setenv(cpushare.Env, v)
		var stderr strings.Builder
		code := NodeMain([]string{"--coordinator=127.0.0.1:1", "--dial-timeout=1ms"}, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), cpushare.Env) {
			t.Errorf("%s=%s: exit %d, %q; want 2, naming %s", cpushare.Env, v, code, stderr.String(), cpushare.Env)
		}
	}
}
