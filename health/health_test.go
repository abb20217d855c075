package health

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/monoclock"
)

func TestBuckets(t *testing.T) {
	tests := []struct {
		name   string
		values []int64
		q      float64
		// the quantile lies within 19% above want, and never above the
		// largest value
		want int64
	}{
		{"empty", nil, 0.99, 0},
		{"one", []int64{1000}, 0.99, 1000},
		{"small values exact", []int64{0, 1, 2, 3}, 1, 3},
		{"p99 of a tail", append(make([]int64, 99), 5_000_000), 0.99, 0},
		{"p100 of a tail", append(make([]int64, 99), 5_000_000), 1, 5_000_000},
		{"spread", []int64{1e6, 2e6, 3e6, 4e6, 5e6, 6e6, 7e6, 8e6, 9e6, 10e6}, 0.5, 5e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b buckets
			for _, v := range tt.values {
				b.add(v)
			}
			got := b.quantile(tt.q)
			if got < tt.want || float64(got) > float64(tt.want)*1.19+3 {
				t.Errorf("quantile(%v) = %d, want %d (within 19%% above)", tt.q, got, tt.want)
			}
		})
	}
}

func TestBucketOfIsMonotonic(t *testing.T) {
	prev := -1
	for ns := int64(0); ns < 1<<40; ns = ns*9/8 + 1 {
		b := bucketOf(ns)
		if b < prev {
			t.Fatalf("bucketOf(%d) = %d after %d", ns, b, prev)
		}
		if top := bucketTop(b); top < ns {
			t.Fatalf("bucketTop(bucketOf(%d)) = %d, below the value", ns, top)
		}
		prev = b
	}
}

// TestMonitorSeesAStall makes the process stand still (every P stopped by
// a stop-the-world that the test holds) and checks that the monitor
// reports a stall at least that long, and a starved span around it. It
// asserts lower bounds only: a busy machine can only add to a stall.
func TestMonitorSeesAStall(t *testing.T) {
	base := monoclock.Now()
	m := Start(func() int64 { return monoclock.Now() - base }, nil, nil)
	time.Sleep(3 * Tick)
	stall := 120 * time.Millisecond
	if err := stopTheWorld(stall); err != nil {
		t.Skipf("cannot stop the process with sh and kill: %v", err)
	}
	time.Sleep(3 * Tick)
	m.Lag(7 * time.Millisecond)
	m.Ping(3 * time.Millisecond)
	h := m.Stop(-1)
	if h.StallMax < int64(stall)-int64(Tick) {
		t.Errorf("StallMax = %v, want at least %v", time.Duration(h.StallMax), stall-Tick)
	}
	// A busy machine may add spans of its own; one must hold the stall.
	if !slices.ContainsFunc(h.Starved, func(s history.Span) bool { return s.To-s.From >= int64(stall-Tick) }) {
		t.Errorf("starved spans %v, want one at least %v long", h.Starved, stall-Tick)
	}
	if h.LagMax != int64(7*time.Millisecond) || h.ServerPingMax != int64(3*time.Millisecond) {
		t.Errorf("LagMax, ServerPingMax = %v, %v; want 7ms, 3ms", time.Duration(h.LagMax), time.Duration(h.ServerPingMax))
	}
	if h.CPUs < 1 || h.Elapsed < int64(stall) {
		t.Errorf("CPUs %d, Elapsed %v", h.CPUs, time.Duration(h.Elapsed))
	}
	if h.CPUWait != -1 && (h.CPUWait < 0 || h.CPUWait > 1) {
		t.Errorf("CPUWait = %v, want -1 or a share", h.CPUWait)
	}
}

// TestOwnProcessesNotOthers: the running threads of the run's own
// processes (nodes in processes of their own) are counted as lockbench's:
// a busy child's one thread is seen running, and left out of the other
// processes' tasks; a process gone counts nothing, and does not stop the
// count.
func TestOwnProcessesNotOthers(t *testing.T) {
	var pids []int
	for range 2 {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Skipf("no sh to run a busy child: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		pids = append(pids, cmd.Process.Pid)
	}
	for _, pid := range pids {
		// A busy loop is always running or ready to run, once sh runs it
		// (a moment after the exec, when it may still be loading).
		n, ok := 0, false
		for try := 0; n != 1 && try < 500; try++ {
			time.Sleep(10 * time.Millisecond)
			n, ok = runningThreads(strconv.Itoa(pid))
		}
		if !ok || n != 1 {
			t.Fatalf("busy child %d: %d threads running (ok %v), want 1", pid, n, ok)
		}
	}
	if n := runningOf(append(pids, 999999999)); n != 2 {
		t.Errorf("the busy children and a process gone: %d threads running, want 2", n)
	}
	if _, ok := runningThreads("999999999"); ok {
		t.Error("a process that does not exist read as running threads")
	}
	if _, ok := OthersRunning(append(pids, 999999999)); !ok {
		t.Error("OthersRunning failed on a list with a process gone")
	}
}

// TestMonitorCountsTheMostCPUs: a process whose GOMAXPROCS moved while it
// was monitored (a node on its share of the CPUs) reports the most it
// had, though it started and ended with fewer.
func TestMonitorCountsTheMostCPUs(t *testing.T) {
	all := runtime.GOMAXPROCS(0)
	if all < 2 {
		t.Skipf("GOMAXPROCS is %d: nothing to move", all)
	}
	defer runtime.GOMAXPROCS(all)
	runtime.GOMAXPROCS(1)
	base := monoclock.Now()
	m := Start(func() int64 { return monoclock.Now() - base }, nil, nil)
	// On every CPU until two samples are taken (the first may have read
	// GOMAXPROCS before it moved), then on one again.
	runtime.GOMAXPROCS(all)
	samples := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.procSamples
	}
	for n0 := samples(); samples() < n0+2; {
		time.Sleep(Tick)
	}
	runtime.GOMAXPROCS(1)
	h := m.Stop(-1)
	if h.CPUs != all {
		t.Errorf("CPUs %d, want the most it had, %d", h.CPUs, all)
	}
}

// TestRunningIn reads the running tasks from /proc/loadavg's text, and
// refuses a text that does not give them.
func TestRunningIn(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
		ok   bool
	}{
		{"0.52 0.58 0.59 3/151 12345\n", 3, true},
		{"12.00 9.10 4.00 17/2048 99", 17, true},
		{"0.00 0.00 0.00 0/1 1", 0, false}, // the reader runs: none says nothing
		{"0.00 0.00 0.00 1/1 1", 1, true},
		{"", 0, false},
		{"0.52 0.58 0.59", 0, false},
		{"0.52 0.58 0.59 3 12345", 0, false},
		{"0.52 0.58 0.59 x/151 12345", 0, false},
		{"0.52 0.58 0.59 -3/151 12345", 0, false},
	} {
		n, ok := runningIn(c.text)
		if n != c.want || ok != c.ok {
			t.Errorf("runningIn(%q) = %d, %v; want %d, %v", c.text, n, ok, c.want, c.ok)
		}
	}
	// This machine's: the test's own thread is running as it reads.
	if n, ok := procsRunning(); ok && n < 1 {
		t.Errorf("procsRunning() = %d while this thread runs, want at least 1", n)
	}
}

// TestMonitorObserves: the monitor hands each sample of the other
// processes to its observer as it takes it, and none after Stop.
func TestMonitorObserves(t *testing.T) {
	var mu sync.Mutex
	var seen []bool
	stopped := false
	base := monoclock.Now()
	m := Start(func() int64 { return monoclock.Now() - base }, nil, func(others float64, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			t.Error("a sample observed after Stop returned")
		}
		if ok && others < 0 {
			t.Errorf("observed %v other tasks", others)
		}
		seen = append(seen, ok)
	})
	samples := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.procSamples
	}
	for samples() < 2 {
		time.Sleep(Tick)
	}
	m.Stop(-1)
	mu.Lock()
	defer mu.Unlock()
	stopped = true
	if len(seen) < 2 {
		t.Fatalf("%d samples observed, want the 2 taken", len(seen))
	}
	if _, err := os.Stat("/proc/loadavg"); err == nil && !seen[0] {
		t.Error("the first sample observed failed, though /proc/loadavg reads")
	}
}
