package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    []string // Spec.String of each entry
		wantErr error
	}{
		{in: "", want: nil},
		{in: "pause-holder", want: []string{"pause-holder"}},
		{in: "pause-holder:for=2s:count=3, clock-skew:node=1", want: []string{"pause-holder:count=3:for=2s", "clock-skew:node=1"}},
		{in: "crash-holder:at=acquired", want: []string{"crash-holder:at=acquired"}},
		{in: "latency:node=any", want: []string{"latency:node=any"}},
		{in: "gc-pause", wantErr: ErrUnknown},
		{in: "pause-holder:length=2s", wantErr: ErrParam},
		{in: "pause-holder:for", wantErr: ErrParam},
		{in: "pause-holder:for=soon", wantErr: ErrParam},
		{in: "pause-holder:count=0", wantErr: ErrParam},
		{in: "crash-holder:at=release", wantErr: ErrParam},
		{in: "clock-skew:node=-1", wantErr: ErrParam},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			specs, err := Parse(c.in)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("Parse(%q) error = %v, want %v", c.in, err, c.wantErr)
			}
			var got []string
			for _, s := range specs {
				got = append(got, s.String())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Parse(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestDefaultsScaleWithLease(t *testing.T) {
	specs, err := Parse("pause-holder,server-pause")
	if err != nil {
		t.Fatal(err)
	}
	for _, lease := range []time.Duration{100 * time.Millisecond, 3 * time.Second} {
		v := values{spec: specs[0], env: Env{Lease: lease, Nodes: 2}}
		if got := v.duration("for"); got != 2*lease {
			t.Errorf("lease %v: pause-holder for = %v, want %v (longer than the lease)", lease, got, 2*lease)
		}
		if got := v.duration("every"); got != 3*lease {
			t.Errorf("lease %v: pause-holder every = %v, want %v", lease, got, 3*lease)
		}
	}
	v := values{spec: specs[1], env: Env{CommandTimeout: time.Second}}
	if got := v.duration("for"); got <= time.Second {
		t.Errorf("server-pause for = %v, want longer than the command timeout", got)
	}
}

// TestBoundaryDefaults: pause-holder and pause-before-release strike
// every holder by default, the pause until the next holder has read, for
// a quarter of the sale's timeout (the whole sale when none bounds it),
// and a strike after that window is not taken.
func TestBoundaryDefaults(t *testing.T) {
	tests := []struct {
		spec        string
		timeout     time.Duration
		wantWithin  time.Duration
		claimedLate bool // a holder at the window's end plus a second is struck
	}{
		{"pause-holder", 3 * time.Minute, 45 * time.Second, false},
		{"pause-before-release", 10 * time.Second, 2500 * time.Millisecond, false},
		{"pause-holder", 0, 0, true},
		{"pause-holder:within=0s", time.Minute, 0, true},
		{"pause-holder:within=1s", time.Minute, time.Second, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/timeout=%v", tt.spec, tt.timeout), func(t *testing.T) {
			specs, err := Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			env := Env{Lease: time.Second, Nodes: 2, Timeout: tt.timeout, Seed: 1}
			v := values{spec: specs[0], env: env}
			if got := v.count("count"); got != allCount {
				t.Errorf("count = %d, want all", got)
			}
			if got := v.duration("within"); got != tt.wantWithin {
				t.Errorf("within = %v, want %v", got, tt.wantWithin)
			}
			if specs[0].Fault == PauseHolder && v.raw("until") != untilNext {
				t.Errorf("until = %s, want %s", v.raw("until"), untilNext)
			}
			p, err := specs[0].Fault.plan(specs[0], env, 1)
			if err != nil {
				t.Fatal(err)
			}
			trig := &p.(*holderPlan).trig
			site := workload.Site{Point: trig.point}
			if !trig.claim(trig.at[0], site) {
				t.Error("a holder at the first arming was not struck")
			}
			late := trig.at[0] + int64(tt.wantWithin+time.Second)
			if got := trig.claim(late, site); got != tt.claimedLate {
				t.Errorf("a holder %v after the first arming: struck %v, want %v", tt.wantWithin+time.Second, got, tt.claimedLate)
			}
		})
	}
}

func TestNodeOutOfRange(t *testing.T) {
	specs, err := Parse("clock-skew:node=2")
	if err != nil {
		t.Fatal(err)
	}
	b := redistest.Embedded(t)
	if _, err := New(specs, Env{Lease: time.Second, Nodes: 2, Seed: 1}, workload.Reach{Store: b, Routed: true, InProcess: true}); !errors.Is(err, ErrParam) {
		t.Errorf("New with node 2 of 2: error = %v, want ErrParam", err)
	}
}

func TestScheduleIsAPureFunctionOfTheSeed(t *testing.T) {
	a := schedule(streamSeed(7, "pause-holder", 0), 4, 100*time.Millisecond, time.Second)
	b := schedule(streamSeed(7, "pause-holder", 0), 4, 100*time.Millisecond, time.Second)
	c := schedule(streamSeed(8, "pause-holder", 0), 4, 100*time.Millisecond, time.Second)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different schedules: %v, %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 7 and 8 gave the same schedule %v", a)
	}
	for i := 1; i < len(a); i++ {
		if gap := time.Duration(a[i] - a[i-1]); gap < time.Second {
			t.Errorf("injections %d and %d only %v apart, want at least every=1s", i-1, i, gap)
		}
	}
	if first := time.Duration(a[0]); first < 100*time.Millisecond || first >= 200*time.Millisecond {
		t.Errorf("first injection at %v, want in [after, 2×after)", first)
	}
}

// TestRegistry: All lists the catalog in its order and hands out a copy;
// the faults on a holder are those every lock can take.
func TestRegistry(t *testing.T) {
	all := All()
	if got := len(all); got != len(Names()) {
		t.Fatalf("All has %d faults, Names %d", got, len(Names()))
	}
	all[0] = nil
	if All()[0] == nil {
		t.Error("changing All's slice changed the registry")
	}
	var onHolder []string
	for _, f := range All() {
		if f.OnHolder() {
			onHolder = append(onHolder, f.Name())
		}
	}
	want := []string{"pause-holder", "slow-holder", "pause-before-release", "expire", "crash-holder", "clock-skew"}
	if !slices.Equal(onHolder, want) {
		t.Errorf("faults on a holder: %q, want %q", onHolder, want)
	}
}

// unavailable is a backend that can neither pause nor restart its server.
type unavailable struct{ servers.Backend }

// quorate is a server that can lose its quorum, for the availability
// table alone: the lever itself is pulled on real etcd members by the
// truth table's lose-quorum cells.
type quorate struct{ servers.Backend }

func (quorate) LoseQuorum(context.Context, time.Duration) error { return nil }
func (quorate) CanLoseQuorum() bool                             { return true }

func TestAvailability(t *testing.T) {
	b := redistest.Embedded(t)
	tests := []struct {
		name   string
		reach  workload.Reach
		refuse []Fault
	}{
		{"embedded", workload.Reach{Store: b, Routed: true, InProcess: true, LockKey: true}, []Fault{PauseInstance, CrashInstance, Failover, LoseQuorum}},
		{"a server that cannot pause or restart", workload.Reach{Store: unavailable{b}, Routed: true, InProcess: true, LockKey: true}, []Fault{ServerPause, Restart, PauseInstance, CrashInstance, Failover, LoseQuorum}},
		{"a store the proxy cannot reach", workload.Reach{Store: b, InProcess: true}, []Fault{Latency, Partition, CutLink, PauseInstance, CrashInstance, DeleteLock, Failover, LoseQuorum}},
		{"a service under test", workload.Reach{Store: servers.Endpoints{}}, []Fault{PauseHolder, SlowHolder, PauseBeforeRelease, Expire, CrashHolder, CrashAfterSetNX, ClockSkew, ServerPause, Restart, Latency, Partition, CutLink, PauseInstance, CrashInstance, DeleteLock, Failover, LoseQuorum}},
		{"a service with its pids, its lock key and its Redis", workload.Reach{Store: b, Instances: true, LockKey: true},
			[]Fault{PauseHolder, SlowHolder, PauseBeforeRelease, Expire, CrashHolder, CrashAfterSetNX, ClockSkew, Latency, Partition, CutLink, CrashInstance, Failover, LoseQuorum}},
		{"a service that can be restarted", workload.Reach{Store: servers.Endpoints{}, Instances: true, Restarts: true},
			[]Fault{PauseHolder, SlowHolder, PauseBeforeRelease, Expire, CrashHolder, CrashAfterSetNX, ClockSkew, ServerPause, Restart, Latency, Partition, CutLink, DeleteLock, Failover, LoseQuorum}},
		{"the Sentinel topology lockbench started", workload.Reach{Store: b, InProcess: true, LockKey: true, Failover: true}, []Fault{Latency, Partition, CutLink, PauseInstance, CrashInstance, LoseQuorum}},
		{"a service whose Redis links are relayed", workload.Reach{Store: b, Routed: true},
			[]Fault{PauseHolder, SlowHolder, PauseBeforeRelease, Expire, CrashHolder, CrashAfterSetNX, ClockSkew, Partition, PauseInstance, CrashInstance, DeleteLock, Failover, LoseQuorum}},
		{"a replicated server lockbench started", workload.Reach{Store: b, Routed: true, InProcess: true, LockKey: true, Quorum: quorate{b}}, []Fault{PauseInstance, CrashInstance, Failover}},
	}
	for _, tt := range tests {
		for _, f := range All() {
			err := f.Available(tt.reach)
			if slices.Contains(tt.refuse, f) {
				if !errors.Is(err, ErrUnavailable) {
					t.Errorf("%s on %s: error = %v, want ErrUnavailable", f.Name(), tt.name, err)
				}
			} else if err != nil {
				t.Errorf("%s on %s: %v, want available", f.Name(), tt.name, err)
			}
		}
	}
}

// saleOf is the sale of the implementation called name: a lock's, or one
// of the sales without a lock.
func saleOf(t *testing.T, name string) workload.Sale {
	t.Helper()
	switch name {
	case "none":
		return sales.NoLock()
	case "atomic":
		return sales.Atomic()
	}
	return sales.LockSale(lookup(t, name))
}

// sample is one reading of the nodes' command counters and clocks.
type sample struct {
	at       int64
	commands []int64
	paused   []bool
	pauses   []int64
	// skew[i] brackets node i's clock offset: its clock read between two
	// readings of the real clock, so the offset lies in [lo, hi] exactly,
	// however late the goroutine ran.
	skew []struct{ lo, hi time.Duration }
}

// sampler wraps the faults' injector and reads every node's command
// counter and clock every few milliseconds while the sale runs.
type sampler struct {
	*Injector
	mu      sync.Mutex
	samples []sample
}

func (s *sampler) Run(ctx context.Context, c *workload.Controls) {
	go func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			sm := sample{at: c.Now()}
			for i := 0; i < c.Nodes(); i++ {
				n, paused, pauses := c.NodeTraffic(i)
				sm.commands = append(sm.commands, n)
				sm.paused = append(sm.paused, paused)
				sm.pauses = append(sm.pauses, pauses)
				before := time.Now()
				clock := c.NodeClock(i)
				after := time.Now()
				sm.skew = append(sm.skew, struct{ lo, hi time.Duration }{clock.Sub(after), clock.Sub(before)})
			}
			s.mu.Lock()
			s.samples = append(s.samples, sm)
			s.mu.Unlock()
		}
	}()
	s.Injector.Run(ctx, c)
}

// sentWhilePaused is how many commands node let past its pause between
// two readings taken within one pause, over all such pairs, and how many
// such pairs there were. The readings are exact (see NodeTraffic): no
// slack for scheduling is needed.
func (s *sampler) sentWhilePaused(node int) (sent int64, pairs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 1; i < len(s.samples); i++ {
		a, b := &s.samples[i-1], &s.samples[i]
		if a.paused[node] && b.paused[node] && a.pauses[node] == b.pauses[node] {
			sent += b.commands[node] - a.commands[node]
			pairs++
		}
	}
	return sent, pairs
}

// commandsBetween is how many commands node sent between two instants of
// the sale, as sampled.
func (s *sampler) commandsBetween(node int, from, to int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first, last *sample
	for i := range s.samples {
		sm := &s.samples[i]
		if sm.at >= from && first == nil {
			first = sm
		}
		if sm.at <= to {
			last = sm
		}
	}
	if first == nil || last == nil || last.at <= first.at {
		return -1
	}
	return last.commands[node] - first.commands[node]
}

// sale runs a small sale against impl with the faults in spec on the
// embedded server and returns its history and the sampler.
func sale(t *testing.T, impl, spec string, lease time.Duration) (*history.History, *sampler) {
	t.Helper()
	b := redistest.Embedded(t)
	specs, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	inj, err := New(specs, Env{Lease: lease, CommandTimeout: 500 * time.Millisecond, Nodes: 2, Seed: 1}, workload.Reach{Store: b, Routed: true, InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inj.Close() })
	s := &sampler{Injector: inj}
	h, err := workload.Run(t.Context(), workload.Config{
		Name: impl, Sale: saleOf(t, impl), Servers: &servers.Set{Redis: b}, Injector: s,
		Workload: workload.Workload{Prefix: "t:", Clients: 600, Nodes: 2, Workers: 50, Pool: 16,
			Stock: 450, Attempts: 1, Ramp: time.Second, TTL: lease, Timeout: 20 * time.Second,
			CommandTimeout: 500 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, s
}

// injections returns the recorded injections of the named fault.
func injections(h *history.History, name string) []history.Fault {
	var out []history.Fault
	for _, f := range h.Faults {
		if f.Name == name {
			out = append(out, f)
		}
	}
	return out
}

func TestPausedNodeMakesNoCalls(t *testing.T) {
	h, s := sale(t, "lua", "pause-holder:count=1:until=for:for=400ms", 150*time.Millisecond)
	fs := injections(h, "pause-holder")
	if len(fs) != 1 {
		t.Fatalf("pause-holder fired %d times, want 1", len(fs))
	}
	f := fs[0]
	if d := time.Duration(f.End - f.Start); d < 400*time.Millisecond {
		t.Errorf("pause lasted %v, want at least 400ms", d)
	}
	// Commands already on the wire when the pause began may complete;
	// nothing new leaves the node until it ends.
	sent, pairs := s.sentWhilePaused(f.Node)
	if pairs == 0 {
		t.Fatalf("no two readings of node %d fell within its pause", f.Node)
	}
	if sent != 0 {
		t.Errorf("paused node %d sent %d commands during its pause", f.Node, sent)
	}
	if n := s.commandsBetween(1-f.Node, f.Start, f.End); n <= 0 {
		t.Errorf("the other node sent %d commands during the pause, want it to run on", n)
	}
}

func TestSlowHolderStopsOnlyItsBusinessStep(t *testing.T) {
	h, s := sale(t, "lua", "slow-holder:count=1:for=400ms", 150*time.Millisecond)
	fs := injections(h, "slow-holder")
	if len(fs) != 1 {
		t.Fatalf("slow-holder fired %d times, want 1", len(fs))
	}
	f := fs[0]
	slack := int64(20 * time.Millisecond)
	if n := s.commandsBetween(f.Node, f.Start+slack, f.End-slack); n <= 0 {
		t.Errorf("node %d sent %d commands while one of its holders was slow, want the rest of it to run on", f.Node, n)
	}
	var holder *history.Op
	for i := range h.Ops {
		if h.Ops[i].Client == f.Client {
			holder = &h.Ops[i]
		}
	}
	if holder == nil || holder.WriteCall-holder.ReadReturn < int64(400*time.Millisecond) {
		t.Errorf("slow holder %+v: want at least 400ms between its read and its write", holder)
	}
}

func TestCrashedHolderNeverReleases(t *testing.T) {
	for _, impl := range []string{"lua", "watchdog"} {
		t.Run(impl, func(t *testing.T) {
			// The crashed holder's acquisition is recorded when its
			// goroutine runs again, up to a stall after the server took
			// it: the lease is long against a busy machine's stalls, so
			// that the margin below (half of it) outlasts them.
			lease := 2 * time.Second
			h, _ := sale(t, impl, "crash-holder:count=1", lease)
			fs := injections(h, "crash-holder")
			if len(fs) != 1 {
				t.Fatalf("crash-holder fired %d times, want 1", len(fs))
			}
			var crashed *history.Op
			for i := range h.Ops {
				if h.Ops[i].Client == fs[0].Client {
					crashed = &h.Ops[i]
				}
			}
			if crashed == nil || crashed.Outcome != history.Crashed || crashed.ReleaseCall != 0 || crashed.Released != 0 {
				t.Fatalf("crashed client's op %+v: want outcome crashed and no release", crashed)
			}
			// Nobody gets the lock until the lease runs out: the watchdog
			// died with its client, so the lease does run out.
			next := int64(-1)
			for i := range h.Ops {
				op := &h.Ops[i]
				if op.Acquired > crashed.Acquired && (next < 0 || op.Acquired < next) {
					next = op.Acquired
				}
			}
			if next < 0 {
				t.Fatalf("no client took the lock after the crash: the lease never ran out")
			}
			// Not long before the lease ran out (the embedded server's
			// clock advances by ticks, so a lease may end up to a tick
			// early); how long after depends on the machine, and is not
			// asserted.
			if wait := time.Duration(next - crashed.Acquired); wait < lease/2 {
				t.Errorf("next holder %v after the crashed one acquired, want about the lease (%v) or more", wait, lease)
			}
		})
	}
}

func TestClockSkewMovesOnlyItsNode(t *testing.T) {
	h, s := sale(t, "lua", "clock-skew:offset=10s:node=1", 200*time.Millisecond)
	if len(injections(h, "clock-skew")) != 1 {
		t.Fatalf("clock-skew recorded %d times, want 1", len(injections(h, "clock-skew")))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) < 10 {
		t.Fatalf("only %d samples", len(s.samples))
	}
	sm := s.samples[len(s.samples)/2]
	for node, want := range []time.Duration{0, 10 * time.Second} {
		if b := sm.skew[node]; want < b.lo || want > b.hi {
			t.Errorf("node %d's clock is between %v and %v off, want %v", node, b.lo, b.hi, want)
		}
	}
}

func TestPartitionLosesTheNodesCommands(t *testing.T) {
	h, s := sale(t, "lua", "partition:for=300ms", 150*time.Millisecond)
	fs := injections(h, "partition")
	if len(fs) != 1 {
		t.Fatalf("partition fired %d times, want 1", len(fs))
	}
	f := fs[0]
	var cut *history.Op
	for i := range h.Ops {
		if h.Ops[i].Client == f.Client {
			cut = &h.Ops[i]
		}
	}
	// The holder's write went into the cut: its outcome is not known,
	// and stays so in the history.
	if cut == nil || cut.Write != history.Indeterminate || cut.Outcome != history.Unknown {
		t.Errorf("cut holder's op %+v: want an indeterminate write, outcome unknown", cut)
	}
	slack := int64(20 * time.Millisecond)
	if n := s.commandsBetween(1-f.Node, f.Start+slack, f.End-slack); n <= 0 {
		t.Errorf("the other node sent %d commands during the cut, want it to run on", n)
	}
}

func TestServerPauseStopsEveryNode(t *testing.T) {
	h, _ := sale(t, "atomic", "server-pause:for=1s", 200*time.Millisecond)
	fs := injections(h, "server-pause")
	if len(fs) != 1 {
		t.Fatalf("server-pause fired %d times, want 1", len(fs))
	}
	f := fs[0]
	// No operation returns from the server while it is paused. An
	// instant is taken when its goroutine runs again: one that got its
	// answer before the pause but waited for a core, or the injector
	// recording the pause's end late, moves an instant across the edge by
	// as long as the harness stood still, which it measured.
	slack := int64(20 * time.Millisecond)
	if hl := h.Header.Health; hl != nil {
		slack += max(hl.StallMax, hl.SchedMax)
	}
	for _, op := range h.Ops {
		if op.ReadReturn > f.Start+slack && op.ReadReturn < f.End-slack {
			t.Fatalf("client %d got an answer at %v, inside the pause [%v, %v]", op.Client,
				time.Duration(op.ReadReturn), time.Duration(f.Start), time.Duration(f.End))
		}
	}
	unknown := 0
	for _, op := range h.Ops {
		if op.Outcome == history.Unknown {
			unknown++
		}
	}
	if unknown == 0 {
		t.Errorf("no operation timed out during a pause longer than the command timeout")
	}
}
