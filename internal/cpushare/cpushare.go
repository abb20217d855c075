// Package cpushare runs a node process on its share of the machine's CPUs
// while other processes leave the machine to the run, and on every CPU
// while they compete for it.
//
// Each node process of a sale on one machine is a Go runtime of its own.
// With every CPU each, two nodes, their coordinator and the server under
// test park and wake more threads than the cores can run: on 2 cores, two
// process nodes spend about twice the CPU of two nodes in one process, and
// that CPU is the server's. On their share (GOMAXPROCS = CPUs / nodes) they
// spend less. But the kernel shares a busy machine's CPU among threads,
// not processes: beside other busy processes a node on its share gets less
// of the machine than one with every CPU, and a gate's cells go unjudged.
// So a node takes its share only while the other processes' ready tasks
// stay below the bound at which the checker calls the harness saturated
// (checker.OthersBound a core), and every CPU again as soon as they reach
// it.
package cpushare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/health"
)

// Env is the environment variable that gives a node process its share of
// the CPUs: a count of CPUs, at least 1 and fewer than GOMAXPROCS.
const Env = "LOCKBENCH_CPU_SHARE"

// For is the environment that gives each of nodes node processes on this
// machine its share of the CPUs this process may use: GOMAXPROCS / nodes,
// at least 1. Nil when GOMAXPROCS is set (the user's choice, which the
// nodes inherit, stands) or when the share would be every CPU.
func For(nodes int) []string {
	if Unshared() != "" || nodes < 1 {
		return nil
	}
	all := runtime.GOMAXPROCS(0)
	cpus := max(1, all/nodes)
	if cpus >= all {
		return nil
	}
	return []string{Env + "=" + strconv.Itoa(cpus)}
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
	if err != nil || n < 1 || n >= all {
		return 0, fmt.Errorf("cpushare: $%s=%q: want a count of CPUs from 1 to %d, fewer than this process's %d", Env, v, max(1, all-1), all)
	}
	return n, nil
}

// Window is how many of the other processes' samples (one every
// health.SampleInterval) Run weighs: a hog shows within a few, a moment's
// burst does not move the share.
const Window = 8

// Run keeps this process's GOMAXPROCS at cpus while the other processes
// (all but this one and those own lists) kept fewer ready tasks than
// checker.OthersBound a core over the last Window samples, and at the
// runtime's default (every CPU) otherwise, until ctx ends. It starts on
// every CPU, returns to it after the other processes reached the bound
// only once a whole new Window is quiet, and ends on it: when ctx ends, or
// at once where the kernel does not say how many tasks are ready. Run is
// for a process whose GOMAXPROCS the user did not set (see FromEnv).
func Run(ctx context.Context, cpus int, own func() []int) {
	run(ctx, health.SampleInterval, cpus, func() (float64, bool) { return health.OthersRunning(own()) })
}

// run is Run with its samples taken by sample, one every interval.
func run(ctx context.Context, interval time.Duration, cpus int, sample func() (float64, bool)) {
	all := runtime.GOMAXPROCS(0)
	defer runtime.SetDefaultGOMAXPROCS()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var samples []float64
	shared := false // on cpus rather than the default
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, ok := sample()
		if !ok {
			return
		}
		samples = append(samples, n)
		if len(samples) > Window {
			samples = samples[1:]
		}
		switch share := Want(samples, cpus, all, runtime.NumCPU()) == cpus; {
		case share && !shared:
			runtime.GOMAXPROCS(cpus)
			shared = true
		case !share && shared:
			runtime.SetDefaultGOMAXPROCS()
			shared = false
			// Back on its share only after a whole quiet window: at most
			// one stop-the-world of each kind a window.
			samples = samples[:0]
		}
	}
}

// Want is the GOMAXPROCS to run on after samples, the other processes'
// ready tasks at each of the last samples (oldest first): cpus when a whole
// Window of them averaged fewer than checker.OthersBound a core of the
// machine's cores, all otherwise.
func Want(samples []float64, cpus, all, cores int) int {
	if len(samples) < Window {
		return all
	}
	sum := 0.0
	for _, n := range samples[len(samples)-Window:] {
		sum += n
	}
	if sum/Window < checker.OthersBound*float64(max(cores, 1)) {
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
