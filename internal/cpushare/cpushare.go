// Package cpushare runs a node process on its share of the machine's CPUs
// while other processes leave the machine to the run, and on every CPU
// while they compete for it.
//
// Each node process of a sale on one machine is a Go runtime of its own.
// With every CPU each, two nodes, their coordinator and the server under
// test park and wake more threads than the cores can run: on 2 cores, two
// process nodes spend about twice the CPU of two nodes in one process, and
// that CPU is the server's. On their share (GOMAXPROCS = CPUs / nodes) they
// spend about what one process would. But the kernel shares a busy
// machine's CPU among threads, not processes: beside other busy processes
// a node on its share gets less of the machine than one with every CPU,
// and a gate's cells go unjudged. So a node takes its share only while
// the other processes' ready tasks stay below one a core, the bound at
// which the checker calls the harness saturated (checker.OthersBound),
// and every CPU again as soon as they reach it.
package cpushare

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/health"
)

// Env is the environment variable that gives a node process its share of
// the CPUs: a count of CPUs, at least 1 and at most GOMAXPROCS.
const Env = "LOCKBENCH_CPU_SHARE"

// For is the environment that gives each of nodes node processes on this
// machine its share of the CPUs this process may use (at least 1). Nil
// when GOMAXPROCS is set (the user's choice, which the nodes inherit,
// stands) or when a node's share would be every CPU.
func For(nodes int) []string {
	if _, set := os.LookupEnv("GOMAXPROCS"); set || nodes < 2 {
		return nil
	}
	return []string{Env + "=" + strconv.Itoa(max(1, runtime.GOMAXPROCS(0)/nodes))}
}

// FromEnv reads the share Env gives, and removes it from the environment
// (it is not passed on). 0 when it is not set; an error naming the
// variable when it is not a count of 1 to GOMAXPROCS.
func FromEnv() (int, error) {
	v, set := os.LookupEnv(Env)
	if !set {
		return 0, nil
	}
	os.Unsetenv(Env)
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > runtime.GOMAXPROCS(0) {
		return 0, fmt.Errorf("$%s=%q: want a count of CPUs from 1 to %d", Env, v, runtime.GOMAXPROCS(0))
	}
	return n, nil
}

// Every is how often Run samples the other processes' ready tasks (as
// health does), and Window how many samples it weighs: a hog is seen
// within a few samples, a moment's burst does not move the share.
const (
	Every  = 50 * time.Millisecond
	Window = 8
)

// Run keeps this process's GOMAXPROCS at share while the other processes
// (all but this one and those own lists) kept fewer than one task a core
// ready to run over the last Window samples, and at every CPU it started
// with otherwise, until ctx ends; then it gives back every CPU. It starts
// on every CPU, and stops on every CPU where the kernel does not say how
// many tasks are ready.
func Run(ctx context.Context, share int, own func() []int) {
	run(ctx, Every, share, func() (float64, bool) { return health.OthersRunning(own()) })
}

// run is Run with its samples taken by sample, every every.
func run(ctx context.Context, every time.Duration, share int, sample func() (float64, bool)) {
	all := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(all)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var samples []float64
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
		if p := Want(samples, share, all, runtime.NumCPU()); p != runtime.GOMAXPROCS(0) {
			runtime.GOMAXPROCS(p)
		}
	}
}

// Want is the GOMAXPROCS to run on after samples, the other processes'
// ready tasks at each of the last samples (oldest first): share when a
// whole Window of them averaged below one a core of the machine's cores,
// all otherwise.
func Want(samples []float64, share, all, cores int) int {
	if len(samples) < Window {
		return all
	}
	sum := 0.0
	for _, n := range samples[len(samples)-Window:] {
		sum += n
	}
	if sum/Window < float64(max(cores, 1)) {
		return share
	}
	return all
}

// Family is this process's parent and the parent's other children: a
// node's coordinator and its fellow nodes, whose threads are the run's,
// not other processes'. Nil where /proc does not say.
func Family() []int {
	parent := os.Getppid()
	if parent <= 1 {
		return nil
	}
	out := []int{parent}
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
			if pid, err := strconv.Atoi(f); err == nil && pid != self {
				out = append(out, pid)
			}
		}
	}
	return out
}
