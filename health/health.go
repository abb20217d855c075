// Package health measures the harness's own health while a sale runs:
// whether lockbench could drive the workload at the speed the workload
// asks, or was itself starved of CPU, stalled, or fell behind its arrival
// schedule. Load generators that people trust say when they themselves are
// the bottleneck; lockbench measures it in every run, on every node, so
// that the checker never turns the harness's starvation into a verdict on
// the lock (see history.Health for what each figure means).
//
// A Monitor samples four sources: a timer that should fire every Tick (its
// lateness is how long the process stood still at once), the Go runtime's
// scheduler latency and GC pauses (runtime/metrics), the process's CPU time
// (getrusage) and the time the kernel kept its threads waiting for a core
// (/proc/self/task/*/schedstat). The caller adds the lateness of each
// arrival it hands out (Lag) and the round trips to an in-process server
// (Ping).
package health

import (
	"math"
	"math/bits"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/history"
)

// Tick is how often the stall timer should fire. It costs a wake-up every
// few milliseconds, and sees any stall longer than the scheduler's slices.
const Tick = 5 * time.Millisecond

// Monitor measures the process's health from Start to Stop. Its methods
// are safe for concurrent use.
type Monitor struct {
	now     func() int64
	own     func() []int // the run's other processes (see Start)
	observe func(others float64, ok bool)
	started time.Time
	cpu0    time.Duration
	sched0  schedStat
	rt0     []metrics.Sample

	mu      sync.Mutex
	others  float64 // the sum of the samples of other processes' running tasks
	samples int     // and how many
	stalls  buckets
	lags    buckets
	ping    int64
	starved []history.Span
	// The sum of the samples of GOMAXPROCS, how many, and the most
	// (internal/cpushare moves it in a node process and in the
	// coordinator of node processes).
	procs, procSamples, mostProcs int

	stop chan struct{}
	done chan struct{}
}

// Start starts monitoring. now gives the run's clock (nanoseconds since
// its start), on which the starved spans are written. own, when not nil,
// gives at each sample the PIDs of the run's other processes on this
// machine (a coordinator's nodes, when they are processes of their own; a
// node's coordinator and fellow nodes, when it runs on its share): their
// running threads are lockbench's, not other processes' (a harness busy
// on a quiet machine is not starved). observe, when not nil, is given each
// of those samples as it is taken, one every SampleInterval (ok false
// when the kernel did not say), on the Monitor's goroutine.
func Start(now func() int64, own func() []int, observe func(others float64, ok bool)) *Monitor {
	m := &Monitor{now: now, own: own, observe: observe, started: time.Now(), mostProcs: runtime.GOMAXPROCS(0), cpu0: cpuTime(), sched0: readSchedStat(), rt0: runtimeSamples(), stop: make(chan struct{}), done: make(chan struct{})}
	go m.watchStalls()
	return m
}

// watchStalls sleeps Tick at a time and records how late it woke.
func (m *Monitor) watchStalls() {
	defer close(m.done)
	for tick := 0; ; tick++ {
		if tick%sampleEvery == 0 {
			var own []int
			if m.own != nil {
				own = m.own()
			}
			procs := runtime.GOMAXPROCS(0)
			n, ok := OthersRunning(own)
			m.mu.Lock()
			if ok {
				m.others += n
				m.samples++
			}
			m.procs += procs
			m.procSamples++
			m.mostProcs = max(m.mostProcs, procs)
			m.mu.Unlock()
			if m.observe != nil {
				m.observe(n, ok)
			}
		}
		from := m.now()
		t0 := time.Now()
		select {
		case <-m.stop:
			return
		case <-time.After(Tick):
		}
		late := time.Since(t0) - Tick
		m.mu.Lock()
		m.stalls.add(int64(late))
		if late >= history.StarvedAt {
			m.addStarved(history.Span{From: from, To: m.now()})
		}
		m.mu.Unlock()
	}
}

// addStarved adds s to the starved spans, joining it to the last one when
// they touch.
func (m *Monitor) addStarved(s history.Span) {
	if n := len(m.starved); n > 0 && s.From <= m.starved[n-1].To+int64(Tick) {
		m.starved[n-1].To = max(m.starved[n-1].To, s.To)
		return
	}
	if len(m.starved) < maxSpans {
		m.starved = append(m.starved, s)
	}
}

// sampleEvery is how many ticks go between two samples of the other
// processes' running tasks (50 ms): often enough to see a hog, rarely
// enough to cost nothing.
const sampleEvery = 10

// SampleInterval is how often a Monitor samples the other processes'
// running tasks (OthersRunning).
const SampleInterval = sampleEvery * Tick

// OthersBound is the other processes' ready tasks a core (OthersRunning
// over the cores) at which they alone keep every core busy: from there
// on, the harness got at most about half of the CPU it asked for. The
// checker calls the harness saturated there (checker.OthersBound), and a
// process on its share of the CPUs goes back to every CPU
// (internal/cpushare).
const OthersBound = 1.0

// OthersRunning is how many tasks of other processes are running or ready
// to run now: the kernel's count of them (the running half of the fourth
// field of /proc/loadavg, "running/threads", which /proc/stat gives as
// procs_running at more cost) less the running threads of this
// process and of the run's own processes own (see Start). ok is false
// where the kernel does not say.
func OthersRunning(own []int) (float64, bool) {
	all, ok := procsRunning()
	if !ok {
		return 0, false
	}
	mine, ok := runningThreads("self")
	if !ok {
		return 0, false
	}
	return float64(max(0, all-mine-runningOf(own))), true
}

// procsRunning is the kernel's count of tasks running or ready to run
// (/proc/loadavg: "0.52 0.58 0.59 3/151 12345").
func procsRunning() (int, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	return runningIn(string(b))
}

// runningIn is the count of tasks running or ready to run that a
// /proc/loadavg's text gives; ok is false when it gives none (at least
// the reader runs).
func runningIn(loadavg string) (int, bool) {
	f := strings.Fields(loadavg)
	if len(f) < 4 {
		return 0, false
	}
	running, _, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(running)
	if err != nil || n < 1 {
		// The reader itself is running: a count of none is a procfs that
		// does not say (an emulated one).
		return 0, false
	}
	return n, true
}

// runningOf is how many threads of the processes pids are running or
// ready to run; a process gone has none.
func runningOf(pids []int) int {
	n := 0
	for _, pid := range pids {
		k, _ := runningThreads(strconv.Itoa(pid))
		n += k
	}
	return n
}

// runningThreads is how many threads of process pid ("self" for this
// one) are running or ready to run (/proc/<pid>/task/*/stat); ok is false
// when the process cannot be read.
func runningThreads(pid string) (int, bool) {
	dir, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		return 0, false
	}
	n := 0
	for _, e := range dir {
		st, err := os.ReadFile("/proc/" + pid + "/task/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The state follows the command's closing parenthesis.
		if i := strings.LastIndexByte(string(st), ')'); i >= 0 && i+2 < len(st) && st[i+2] == 'R' {
			n++
		}
	}
	return n, true
}

// maxSpans bounds the starved spans kept: a history stays small whatever
// the machine did.
const maxSpans = 1000

// Lag records that an arrival was handed out d after its schedule.
func (m *Monitor) Lag(d time.Duration) {
	m.mu.Lock()
	m.lags.add(int64(d))
	m.mu.Unlock()
}

// Ping records a round trip to a server that runs inside this process.
func (m *Monitor) Ping(d time.Duration) {
	m.mu.Lock()
	m.ping = max(m.ping, int64(d))
	m.mu.Unlock()
}

// Stop ends the monitoring and returns what it measured, for node node
// (-1 for the process that ran the sale).
func (m *Monitor) Stop(node int) history.Health {
	close(m.stop)
	<-m.done
	elapsed := time.Since(m.started)
	procs := runtime.GOMAXPROCS(0)
	m.mu.Lock()
	used := float64(m.procs+procs) / float64(m.procSamples+1)
	most := max(m.mostProcs, procs)
	m.mu.Unlock()
	h := history.Health{Node: node, Elapsed: int64(elapsed), CPUs: most, Cores: runtime.NumCPU(), CPUWait: -1, Others: -1}
	if elapsed > 0 {
		h.CPUUse = round3(float64(cpuTime()-m.cpu0) / float64(elapsed) / used)
	}
	if s := readSchedStat(); s.ok && m.sched0.ok {
		run, wait := s.run-m.sched0.run, s.wait-m.sched0.wait
		if run+wait > 0 {
			h.CPUWait = round3(float64(wait) / float64(run+wait))
		}
	}
	rt1 := runtimeSamples()
	h.SchedP99, h.SchedMax = histDelta(m.rt0[0], rt1[0])
	h.GCPauseMax, h.GCPauseTotal = pauseDelta(m.rt0[1], rt1[1])
	m.mu.Lock()
	defer m.mu.Unlock()
	h.StallP99, h.StallMax = m.stalls.quantile(0.99), m.stalls.max
	h.LagP99, h.LagMax = m.lags.quantile(0.99), m.lags.max
	h.ServerPingMax = m.ping
	if m.samples > 0 {
		h.Others = round3(m.others / float64(m.samples))
	}
	h.Starved = append([]history.Span(nil), m.starved...)
	return h
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// schedStat is the kernel's account of the process's threads: the time
// they ran and the time they waited, ready, for a core.
type schedStat struct {
	run, wait int64
	ok        bool
}

// readSchedStat sums /proc/self/task/*/schedstat (Linux; ok is false
// elsewhere, or where the kernel keeps no such account).
func readSchedStat() schedStat {
	dir, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return schedStat{}
	}
	var s schedStat
	for _, e := range dir {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/schedstat")
		if err != nil {
			continue // a thread that ended in between
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		run, err1 := strconv.ParseInt(f[0], 10, 64)
		wait, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		s.run += run
		s.wait += wait
		s.ok = true
	}
	return s
}

// runtimeSamples reads the scheduler's latency and the GC's pauses.
func runtimeSamples() []metrics.Sample {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}, {Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(s)
	return s
}

// histDelta returns the 99th percentile and the largest finite bucket
// bound of the counts b added since a, in nanoseconds.
func histDelta(a, b metrics.Sample) (p99, most int64) {
	counts, bounds, ok := delta(a, b)
	if !ok {
		return 0, 0
	}
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0, 0
	}
	want := uint64(math.Ceil(float64(total) * 0.99))
	var seen uint64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		seen += c
		upper := finite(bounds, i)
		if p99 == 0 && seen >= want {
			p99 = upper
		}
		most = upper
	}
	return p99, most
}

// pauseDelta returns the longest pause (its bucket's upper bound) and the
// pauses' total (each at its bucket's lower bound) since a.
func pauseDelta(a, b metrics.Sample) (longest, total int64) {
	counts, bounds, ok := delta(a, b)
	if !ok {
		return 0, 0
	}
	for i, c := range counts {
		if c == 0 {
			continue
		}
		longest = finite(bounds, i)
		if lo := bounds[i]; !math.IsInf(lo, -1) {
			total += int64(c) * int64(lo*1e9)
		}
	}
	return longest, total
}

// delta subtracts histogram a from b, which the runtime only ever grows.
func delta(a, b metrics.Sample) ([]uint64, []float64, bool) {
	if a.Value.Kind() != metrics.KindFloat64Histogram || b.Value.Kind() != metrics.KindFloat64Histogram {
		return nil, nil, false
	}
	ha, hb := a.Value.Float64Histogram(), b.Value.Float64Histogram()
	if len(ha.Counts) != len(hb.Counts) {
		return nil, nil, false
	}
	out := make([]uint64, len(hb.Counts))
	for i := range out {
		out[i] = hb.Counts[i] - ha.Counts[i]
	}
	return out, hb.Buckets, true
}

// finite is bucket i's upper bound in nanoseconds, or its lower one when
// the upper is infinite.
func finite(bounds []float64, i int) int64 {
	up := bounds[i+1]
	if math.IsInf(up, 1) {
		up = bounds[i]
	}
	return int64(up * 1e9)
}

// buckets is a histogram of durations in buckets a quarter of a power of
// two wide (within 19% of the true value), and its exact largest value.
type buckets struct {
	n     [4 * 64]uint64
	total uint64
	max   int64
}

func (b *buckets) add(ns int64) {
	ns = max(ns, 0)
	b.n[bucketOf(ns)]++
	b.total++
	b.max = max(b.max, ns)
}

// bucketOf is the bucket of ns: four a power of two.
func bucketOf(ns int64) int {
	if ns < 4 {
		return int(ns)
	}
	e := 63 - bits.LeadingZeros64(uint64(ns))
	frac := (ns >> (e - 2)) & 3
	return min(4*e+int(frac), len(buckets{}.n)-1)
}

// bucketTop is the largest value bucket i holds.
func bucketTop(i int) int64 {
	if i < 4 {
		return int64(i)
	}
	e, frac := i/4, int64(i%4)
	return (4+frac+1)<<(e-2) - 1
}

// quantile returns the top of the bucket that holds quantile q, never
// more than the largest value seen.
func (b *buckets) quantile(q float64) int64 {
	if b.total == 0 {
		return 0
	}
	want := uint64(math.Ceil(float64(b.total) * q))
	var seen uint64
	for i, c := range b.n {
		seen += c
		if seen >= want {
			return min(bucketTop(i), b.max)
		}
	}
	return b.max
}
