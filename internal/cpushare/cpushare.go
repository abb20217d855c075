// Package cpushare runs the processes of a sale whose nodes are processes
// on this machine (the coordinator and each node) on their share of the
// CPUs while other processes leave the machine to the run, and on every
// CPU while they compete for it.
//
// Each node process of a sale on one machine is a Go runtime of its own,
// and so is its coordinator. With every CPU each, they park and wake more
// threads than the cores can run: on 2 cores, two process nodes and their
// coordinator spend far more CPU per attempt than two nodes in one
// process, and that CPU is the server's. On their share (GOMAXPROCS =
// CPUs / nodes) they spend less. But the kernel shares a busy machine's
// CPU among threads, not processes: beside other busy processes a process
// on its share gets less of the machine than one with every CPU, and a
// gate's cells go unjudged. So a process takes its share only while the
// other processes' ready tasks stay below the bound at which the checker
// calls the harness saturated (health.OthersBound a core), and every CPU
// again as soon as they reach it.
//
// The samples are the health monitor's (health.Start's observe, one every
// health.SampleInterval), so that a process reads /proc once a sample.
package cpushare

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/health"
)

// Env is the environment variable that gives a node process its share of
// the CPUs: a count of CPUs, at least 1 and fewer than GOMAXPROCS.
const Env = "LOCKBENCH_CPU_SHARE"

// For is the share of the CPUs this process may use that each process of a
// sale with nodes node processes on this machine runs on: GOMAXPROCS /
// nodes, at least 1. 0 when GOMAXPROCS is set (the user's choice, which
// the nodes inherit, stands) or when the share would be every CPU.
func For(nodes int) int {
	if Unshared() != "" || nodes < 1 {
		return 0
	}
	all := runtime.GOMAXPROCS(0)
	if cpus := max(1, all/nodes); cpus < all {
		return cpus
	}
	return 0
}

// Unshared says why this process has no share of the CPUs to take: the
// user set GOMAXPROCS, or it has one CPU. "" when it has.
func Unshared() string {
	if v, set := os.LookupEnv("GOMAXPROCS"); set {
		return "GOMAXPROCS=" + v + " is set: the user's choice stands"
	}
	if n := runtime.GOMAXPROCS(0); n < 2 {
		return "GOMAXPROCS is " + strconv.Itoa(n) + ": no share is smaller than every CPU"
	}
	return ""
}

// FromEnv reads the share Env gives, and removes it from the environment
// (it is not passed on). 0 when it is not set, or when GOMAXPROCS is (the
// user's choice stands); an error naming the variable when it is not a
// count of CPUs from 1 to fewer than GOMAXPROCS.
func FromEnv() (int, error) {
	v, set := os.LookupEnv(Env)
	if !set {
		return 0, nil
	}
	os.Unsetenv(Env)
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return 0, nil
	}
	all := runtime.GOMAXPROCS(0)
	n, err := strconv.Atoi(v)
	if err != nil || !Fits(n) {
		return 0, fmt.Errorf("cpushare: $%s=%q: want a count of CPUs from 1 to %d, fewer than this process's %d", Env, v, max(1, all-1), all)
	}
	return n, nil
}

// Window is how many of the other processes' samples (one every
// health.SampleInterval) a Share weighs: a hog shows within a few, a
// moment's burst does not move the share.
const Window = 8

// Share keeps this process's GOMAXPROCS at its share while the other
// processes kept fewer ready tasks than health.OthersBound a core over
// the last Window samples it observed, and at the runtime's default (every
// CPU) otherwise. It starts on every CPU, returns to it after the other
// processes reached the bound only once a whole new Window is quiet, and
// ends on it: at End, or at once when a sample fails (the kernel does not
// say how many tasks are ready). A Share is for a process whose GOMAXPROCS
// the user did not set (see FromEnv); its methods are safe for concurrent
// use, and do nothing on a nil Share.
type Share struct {
	mu      sync.Mutex
	cpus    int
	all     int
	samples []float64
	shared  bool // on cpus rather than the default
	ended   bool
}

// Fits reports whether this process can run on a share of cpus CPUs: from
// 1 to fewer than its GOMAXPROCS, which the user did not set (Unshared).
// A share that does not fit is none: every CPU.
func Fits(cpus int) bool {
	return cpus > 0 && cpus < runtime.GOMAXPROCS(0) && Unshared() == ""
}

// New is a Share of cpus CPUs; nil (every CPU) when the share does not fit
// (Fits).
func New(cpus int) *Share {
	if !Fits(cpus) {
		return nil
	}
	return &Share{cpus: cpus, all: runtime.GOMAXPROCS(0)}
}

// Observe weighs one sample of the other processes' ready tasks (ok false:
// the kernel did not say), and moves GOMAXPROCS as the samples ask. Its
// signature is health.Start's observe.
func (s *Share) Observe(others float64, ok bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if !ok {
		s.end()
		return
	}
	s.samples = append(s.samples, others)
	if len(s.samples) > Window {
		s.samples = s.samples[1:]
	}
	switch share := Want(s.samples, s.cpus, s.all, runtime.NumCPU()) == s.cpus; {
	case share && !s.shared:
		runtime.GOMAXPROCS(s.cpus)
		s.shared = true
	case !share && s.shared:
		runtime.SetDefaultGOMAXPROCS()
		s.shared = false
		// Back on its share only after a whole quiet window: at most
		// one stop-the-world of each kind a window.
		s.samples = s.samples[:0]
	}
}

// Prime observes a whole Window of samples from sample (the other
// processes' ready tasks, as Observe takes them), PrimeInterval apart,
// so that a process begins its sale on the share the machine allows,
// rather than on every CPU until its monitor's samples fill a window
// (0.4 s): so, two process nodes and their coordinator sold at 0.7 of
// the rate of the rest of the sale in its first second, and as fast on
// their share from the start (docs/measurements.md, "Process nodes keep
// their buyers' schedule"). It takes (Window-1) × PrimeInterval; the
// monitor's samples go on from its window.
func (s *Share) Prime(sample func() (others float64, ok bool)) {
	if s == nil {
		return
	}
	for i := range Window {
		if i > 0 {
			time.Sleep(PrimeInterval)
		}
		s.Observe(sample())
	}
}

// PrimeInterval is how far apart Prime's samples are: its window takes
// 35 ms, far less than a node's start, and still sees a hog that keeps
// its tasks ready (a moment's burst is weighed again by the monitor's
// samples within a window).
const PrimeInterval = 5 * time.Millisecond

// End gives every CPU back; the samples observed after it change nothing.
func (s *Share) End() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.end()
}

// end is End with s.mu held.
func (s *Share) end() {
	if s.shared {
		runtime.SetDefaultGOMAXPROCS()
		s.shared = false
	}
	s.ended = true
}

// Want is the GOMAXPROCS to run on after samples, the other processes'
// ready tasks at each of the last samples (oldest first): cpus when a whole
// Window of them averaged fewer than health.OthersBound a core of the
// machine's cores, all otherwise.
func Want(samples []float64, cpus, all, cores int) int {
	if len(samples) < Window {
		return all
	}
	sum := 0.0
	for _, n := range samples[len(samples)-Window:] {
		sum += n
	}
	if sum/Window < health.OthersBound*float64(max(cores, 1)) {
		return cpus
	}
	return all
}

// Family is this process's parent and the parent's other children that
// run this same program: a node's coordinator and its fellow nodes, whose
// threads are the run's, not other processes'. The servers a coordinator
// started (etcd, PostgreSQL, Sentinels) are not in it: they count as other
// processes, as the coordinator's own health counts them. Nil where /proc
// does not say.
func Family() []int {
	parent := os.Getppid()
	if parent <= 1 {
		return nil
	}
	out := []int{parent}
	exe, err := os.Executable()
	if err != nil {
		return out
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(parent) + "/task")
	if err != nil {
		return out
	}
	self := os.Getpid()
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(parent) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil || pid == self {
				continue
			}
			if e, err := os.Readlink(filepath.Join("/proc", f, "exe")); err == nil && e == exe {
				out = append(out, pid)
			}
		}
	}
	return out
}
