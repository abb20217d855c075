// Package harness is lockbench's engine, usable as a library: a Plan (an
// implementation, a workload, faults and a seed) run against servers
// (package backends opens them) gives the recorded history and the
// checker's report on it (Result), of which reports.NewRun makes the run
// the CLI prints and writes. The registry of implementations (All,
// Lookup, Register) lives here too, so that the CLI, the matrix, the
// tests and users' own code drive one engine. It imports neither the
// presentation (reports) nor the infrastructure that starts servers
// (backends, containers, sentinels).
package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/safego"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// FaultLease is the lease of a run with faults and no TTL: the sources' 30 s
// lease would make every fault last a minute.
const FaultLease = time.Second

// Workload is the shape of the sale: buyers, nodes, stock, arrivals and
// the bounds on it. Defaults gives source 003's.
type Workload = workload.Workload

// Defaults is source 003's flash sale: 20,000 buyers in one second on two
// nodes of 200 workers, stock 5,000.
func Defaults() Workload {
	return Workload{
		Clients:        20000,
		Nodes:          2,
		Workers:        200,
		Stock:          5000,
		Attempts:       1,
		Ramp:           time.Second,
		Timeout:        3 * time.Minute,
		CommandTimeout: 3 * time.Second,
		Prefix:         "lockbench:",
	}
}

// Lease is the lease a run of w with faults uses: TTL, else FaultLease
// when there are faults, else zero (each implementation's own).
func Lease(w Workload, faults []faults.Spec) time.Duration {
	if w.TTL == 0 && len(faults) > 0 {
		return FaultLease
	}
	return w.TTL
}

// Plan is one run: an implementation, the workload, the faults and the
// seed of every random choice.
type Plan struct {
	Impl     Impl
	Workload Workload
	Faults   []faults.Spec
	Seed     uint64
	// CheckTimeout bounds the linearizability check (default
	// checker.DefaultTimeout).
	CheckTimeout time.Duration
	// Progress, if set, is called a few times a second while the sale
	// runs.
	Progress func(workload.Progress)
	// Nodes says where the sale's nodes run; the zero value keeps them in
	// this process.
	Nodes Nodes
}

// Nodes says where a sale's nodes run: in this process (no Launcher),
// each in a process or container of its own, or on other machines.
type Nodes struct {
	// Launcher starts them: workload.Processes (NodeProcesses gives
	// lockbench's), the containers package's, workload.Remote.
	Launcher workload.Launcher
	// Listen is where their coordinator listens (workload.Config.Listen).
	Listen string
	// Secret is the run's node secret (workload.Config.NodeSecret): a
	// fresh one when empty, except for workload.Remote, which needs it.
	Secret string
	// ClockError is the least clock error to widen the history by
	// (workload.Config.ClockError).
	ClockError time.Duration
}

// Sentinel errors of Run, matched with errors.Is; the workload's
// (servers.ErrUnreachable, workload.ErrPrefixInUse, sales.ErrTablesInUse) and the
// faults' (faults.ErrUnavailable, ErrParam) come through as they are.
var (
	// ErrPlan means the plan cannot run: no sale, a reentry the lock
	// cannot do, a server it needs missing, a rate that is not one.
	ErrPlan = errors.New("harness: bad plan")
)

// Available checks that every fault of specs can strike im on set,
// the one place a fault's availability is decided: the server that holds
// the inventory must pause or restart for the server faults, the nodes'
// links must go through the fault proxy for latency and partition. The
// error wraps faults.ErrUnavailable.
func Available(set *servers.Set, im Impl, specs []faults.Spec, nodes Nodes) error {
	t, err := reach(set, im, nodes)
	if err != nil {
		return err
	}
	for _, sp := range specs {
		if err := sp.Fault.Available(t); err != nil {
			return fmt.Errorf("%w (%s)", err, im.Name)
		}
	}
	return nil
}

// reach is what the faults of a run of im on servers can act on.
func reach(set *servers.Set, im Impl, nodes Nodes) (workload.Reach, error) {
	t, err := workload.ReachOf(set, im.Sale)
	if err != nil {
		return t, fmt.Errorf("%w: %v", ErrPlan, err)
	}
	_, t.RemoteNodes = nodes.Launcher.(workload.Remote)
	return t, nil
}

// Check reports whether plan can run on servers: a sale, a reentry the
// lock can do, the servers it needs, and faults the servers can take
// (Available). Run checks it before the sale, RunAll before the first
// sale of all its plans. The error wraps ErrPlan or
// faults.ErrUnavailable.
func Check(set *servers.Set, plan Plan) error {
	im, w := plan.Impl, plan.Workload
	if set == nil {
		return fmt.Errorf("%w: no servers (backends.Open gives them)", ErrPlan)
	}
	if im.Sale == nil {
		return fmt.Errorf("%w: %s has no sale", ErrPlan, im.Name)
	}
	if w.Rate < 0 || math.IsNaN(w.Rate) || math.IsInf(w.Rate, 0) {
		return fmt.Errorf("%w: a rate of %v buyers per second", ErrPlan, w.Rate)
	}
	if err := im.CheckReentry(w.Reentry); err != nil {
		return err
	}
	if missing := set.Missing(im.Needs().Without(servers.KindRedisServers)); len(missing) > 0 {
		return fmt.Errorf("%w: %s runs on %s, which the servers lack", ErrPlan, im.Name, missing)
	}
	if err := workload.Supports(im.Sale, w); err != nil {
		return fmt.Errorf("%w: %v", ErrPlan, err)
	}
	if err := CheckPipeline(w, plan.Faults); err != nil {
		return err
	}
	if l := plan.Nodes.Launcher; l != nil {
		if err := workload.SupportsNodes(l.Mode(), im.Name, im.Sale, set); err != nil {
			return fmt.Errorf("%w: %v", ErrPlan, err)
		}
	}
	return Available(set, im, plan.Faults, plan.Nodes)
}

// CheckPipeline refuses a pipeline (Workload.Pipeline) under faults, with
// ErrPlan: the faults' probes, their kills and a paused node's
// pass-through find a buyer by its own context, which a round trip of
// several buyers' commands does not carry.
func CheckPipeline(w Workload, specs []faults.Spec) error {
	if w.Pipeline > 0 && len(specs) > 0 {
		return fmt.Errorf("%w: a pipeline runs without faults", ErrPlan)
	}
	return nil
}

// Result is what Run gives: the history the sale recorded and the
// checker's report on it, values a caller judges, keeps or re-checks.
// The engine makes no presentation: reports.NewRun(r.History, r.Report,
// r.NotFired...) builds the run the CLI prints and writes.
type Result struct {
	// History is what the sale recorded; nil when the plan could not run.
	History *history.History
	// Report is the checker's report on History.
	Report checker.Report
	// NotFired names the plan's faults that History records no injection
	// of (Fired), in the plan's order: the implementation has no such
	// window, or no holder reached it in time. A verdict under such a
	// fault rests on no fault at all.
	NotFired []string
}

// Run runs plan's sale on set, injects its faults, checks what was
// recorded and returns the history with the checker's report.
//
// The error is for infrastructure and for plans that cannot run (Check),
// which leave the Result empty; a lock that fails shows in the report,
// never here. A server lost during the sale (servers.ErrUnreachable)
// still returns the history, judged as far as it goes, beside the error.
func Run(ctx context.Context, set *servers.Set, plan Plan) (Result, error) {
	if err := Check(set, plan); err != nil {
		return Result{}, err
	}
	im, w := plan.Impl, plan.Workload
	cfg := workload.Config{Name: im.Name, Sale: im.Sale, Servers: set, Workload: w, Progress: plan.Progress,
		Launcher: plan.Nodes.Launcher, Listen: plan.Nodes.Listen, NodeSecret: plan.Nodes.Secret, ClockError: plan.Nodes.ClockError}
	cfg.Seed = plan.Seed
	cfg.TTL = Lease(w, plan.Faults)
	cfg.Lease = cmp.Or(cfg.TTL, im.DefaultTTL)
	served := &leaseCheck{}
	if len(plan.Faults) > 0 || len(set.TargetVia) > 0 && im.Needs().Has(servers.KindTarget) {
		t, _ := reach(set, im, plan.Nodes) // Check found it
		lease := cmp.Or(cfg.TTL, im.DefaultTTL, FaultLease)
		inj, err := faults.New(plan.Faults, faults.Env{Lease: lease, CommandTimeout: w.CommandTimeout, Nodes: w.Nodes, Timeout: w.Timeout, Seed: plan.Seed}, t)
		if err != nil {
			return Result{}, err
		}
		defer inj.Close()
		cfg.Injector = withFaults{inj, served}
	} else if im.Locked && plan.Nodes.Launcher == nil {
		// Nodes in processes would send every probe here: without
		// faults, their leases are not read.
		cfg.Injector = served
	}
	h, err := workload.Run(ctx, cfg)
	if h == nil {
		return Result{}, err
	}
	res := Result{History: h, Report: checker.Check(h, checker.Options{Timeout: cmp.Or(plan.CheckTimeout, checker.DefaultTimeout)})}
	if why := served.judge(h, cfg.Lease); why != "" {
		// A lock whose lease is not what it says fails, whatever the
		// checks of the history found.
		res.Report.Pass, res.Report.Inconclusive = false, false
		res.Report.Reasons = append(res.Report.Reasons, why)
	}
	for _, sp := range plan.Faults {
		if !Fired(h, sp.Fault.Name()) {
			res.NotFired = append(res.NotFired, sp.Fault.Name())
		}
	}
	return res, err
}

// ErrLost marks the error of RunAll when a server was lost during a sale:
// that sale's result was handed on, judged as far as it goes,
// and the plans after it did not run.
var ErrLost = errors.New("harness: a server was lost during the sale")

// lostError is a loss RunAll returns: it reads as the loss, and wraps
// both the loss and ErrLost.
type lostError struct{ err error }

func (e lostError) Error() string   { return e.err.Error() }
func (e lostError) Unwrap() []error { return []error{ErrLost, e.err} }

// RunAll runs plans one after another on set, as the CLI runs several
// implementations and repetitions, and hands each plan's Result to done,
// in order. Before the first sale it checks every plan (Check), so
// that a fault the servers cannot take in the last plan fails before the
// first plan's sale, not minutes after it.
//
// It stops at the first error and returns it: done's; that of a plan that
// could not run, of which nothing was handed on; that of a server lost
// during a sale, whose result was handed on first (the error
// wraps ErrLost); or a panic in a goroutine of the sale's, whose result
// was handed on first too. When ctx ends, the sale in progress is cut short,
// judged as recorded and handed on, and RunAll returns ctx's cause
// without starting another.
func RunAll(ctx context.Context, set *servers.Set, plans []Plan, done func(Plan, Result) error) error {
	for _, p := range plans {
		if err := Check(set, p); err != nil {
			return err
		}
	}
	for _, p := range plans {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		res, err := Run(ctx, set, p)
		if res.History == nil {
			return err
		}
		if derr := done(p, res); derr != nil {
			return derr
		}
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case errors.Is(err, safego.ErrPanic):
			return err // the run's own failure, not a server's
		case err != nil:
			return lostError{err}
		}
	}
	return nil
}

// Fired reports whether h records an injection of the named fault.
func Fired(h *history.History, name string) bool {
	for _, f := range h.Faults {
		if f.Name == name {
			return true
		}
	}
	return false
}
