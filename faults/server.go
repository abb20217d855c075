package faults

import (
	"context"
	"sync/atomic"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
)

// timedPlan runs injections at scheduled instants of the sale, not at a
// holder's probe.
type timedPlan struct {
	v    values
	at   []int64
	fire func(ctx context.Context, in *Injector, c *workload.Controls, v values)
}

func (p *timedPlan) probe(context.Context, *Injector, *workload.Controls, workload.Site) error {
	return nil
}

func (p *timedPlan) run(ctx context.Context, in *Injector, c *workload.Controls) {
	for _, t := range p.at {
		if waitUntil(ctx, c, t) != nil {
			return
		}
		p.fire(ctx, in, c, p.v)
	}
}

// clockSkew moves one node's clock for the rest of the sale. A lock that
// trusts the clocks of its clients steals from a holder on another node
// only when a waiter of the skewed node tries while that holder is inside:
// to make that moment come in every run, the first holders on the other
// nodes after the jump (skewHolds at most, until one steal is seen) are
// kept in their critical section until another client takes the lock,
// half a lease at most, so that a lock that honours its leases loses
// nothing.
func clockSkew(v values, _ uint64) (plan, error) {
	node, err := v.node("node")
	if err != nil {
		return nil, err
	}
	if node < 0 {
		node = v.env.Nodes - 1
	}
	p := &skewPlan{node: node}
	p.timedPlan = timedPlan{v: v, at: []int64{int64(v.duration("after"))}, fire: func(ctx context.Context, _ *Injector, c *workload.Controls, v values) {
		end := record(c, "clock-skew", node, -1, v)
		defer end()
		c.SkewClock(node, v.duration("offset"))
		p.skewed.Store(true)
		<-ctx.Done()
		c.SkewClock(node, 0)
	}}
	return p, nil
}

// skewHolds bounds how many holders clock-skew keeps waiting for a steal.
const skewHolds = 5

// skewPlan is clock-skew: the jump of the clock, and the holders kept
// waiting for a steal.
type skewPlan struct {
	timedPlan
	node   int
	skewed atomic.Bool  // the clock has jumped
	held   atomic.Int32 // holders kept so far
	stolen atomic.Bool  // a steal was seen
}

func (p *skewPlan) probe(ctx context.Context, in *Injector, _ *workload.Controls, at workload.Site) error {
	if at.Point != locks.Business || at.Node == p.node || !p.skewed.Load() || p.stolen.Load() || p.held.Add(1) > skewHolds {
		return nil
	}
	if _, _, err := in.catches.wait(ctx, locks.Acquired, []int32{at.Client}, false, p.v.env.Lease/2); err == nil {
		p.stolen.Store(true)
	}
	return nil
}

// scheduled builds a fault that acts at seeded instants ("count",
// "after", "every"), on the node its "node" parameter names when onNode,
// else on the server (node -1), recorded for as long as act runs.
func scheduled(name string, onNode bool, act func(ctx context.Context, c *workload.Controls, node int, v values)) func(values, uint64) (plan, error) {
	return scheduledWindow(name, onNode, func(ctx context.Context, c *workload.Controls, node int, v values, window func() func()) {
		end := window()
		defer end()
		act(ctx, c, node, v)
	})
}

// scheduledWindow is scheduled for a fault that says itself when its
// window opens and closes: act calls window when the fault has taken
// hold, and the function it returns when it is about to let go.
func scheduledWindow(name string, onNode bool, act func(ctx context.Context, c *workload.Controls, node int, v values, window func() func())) func(values, uint64) (plan, error) {
	return func(v values, seed uint64) (plan, error) {
		node := -1
		if onNode {
			n, err := v.node("node")
			if err != nil {
				return nil, err
			}
			node = max(n, 0)
		}
		at := schedule(seed, v.count("count"), v.duration("after"), v.duration("every"))
		return &timedPlan{v: v, at: at, fire: func(ctx context.Context, _ *Injector, c *workload.Controls, v values) {
			act(ctx, c, node, v, func() func() { return record(c, name, node, -1, v) })
		}}, nil
	}
}

// pauseInstance stops an instance of a service under test for a while;
// its window is the time the instance was stopped, which a docker pause
// takes a while to reach.
var pauseInstance = scheduledWindow("pause-instance", true, func(ctx context.Context, c *workload.Controls, node int, v values, window func() func()) {
	c.PauseInstance(ctx, node, v.duration("for"), window)
})

// crashInstance kills an instance of a service under test and starts it
// again; the fault lasts until it accepts connections.
var crashInstance = scheduled("crash-instance", true, func(ctx context.Context, c *workload.Controls, node int, v values) {
	c.CrashInstance(ctx, node, v.duration("down"))
})

// serverPause stops the server from answering for a while.
var serverPause = scheduled("server-pause", false, func(ctx context.Context, c *workload.Controls, _ int, v values) {
	if d := v.duration("for"); c.PauseServer(ctx, d) == nil {
		sleep(ctx, d)
	}
})

// loseQuorum stops a majority of the sale's replicated server for a
// while; its window is the time the quorum is gone.
var loseQuorum = scheduled("lose-quorum", false, func(ctx context.Context, c *workload.Controls, _ int, v values) {
	if d := v.duration("for"); c.LoseQuorum(ctx, d) == nil {
		sleep(ctx, d)
	}
})

// restartMain restarts the (main) server without persistence.
var restartMain = scheduled("restart", false, func(ctx context.Context, c *workload.Controls, _ int, _ values) {
	c.RestartServer(ctx)
})

// deleteLock deletes the lock's key on a schedule.
var deleteLock = scheduled("delete-lock", false, func(ctx context.Context, c *workload.Controls, _ int, _ values) {
	c.DeleteLock(ctx)
})

// latencyPlan slows one node's link for a while, or to the end.
type latencyPlan struct {
	timedPlan
	node    int
	proxies *proxies
}

func latency(v values, _ uint64) (plan, error) {
	node, err := v.node("node")
	if err != nil {
		return nil, err
	}
	if node < 0 {
		node = 0
	}
	p := &latencyPlan{node: node}
	p.timedPlan = timedPlan{v: v, at: []int64{int64(v.duration("after"))}, fire: func(ctx context.Context, _ *Injector, c *workload.Controls, v values) {
		end := record(c, "latency", node, -1, v)
		defer end()
		if p.proxies.slow(node, v.duration("delay"), v.duration("jitter")) != nil {
			return
		}
		defer p.proxies.mend(node)
		if d := v.duration("for"); d > 0 {
			sleep(ctx, d)
			return
		}
		<-ctx.Done()
	}}
	return p, nil
}

// cutLink cuts one node's links, both ways, for a while on a schedule:
// what is sent meanwhile is held, and delivered when the cut heals.
type cutLinkPlan struct {
	*timedPlan
	node    int
	proxies *proxies
}

func cutLink(v values, seed uint64) (plan, error) {
	node, err := v.node("node")
	if err != nil {
		return nil, err
	}
	p := &cutLinkPlan{node: max(node, 0)}
	build := scheduled("cut-link", true, func(ctx context.Context, c *workload.Controls, node int, v values) {
		if p.proxies.cut(node) != nil {
			return
		}
		defer p.proxies.mend(node)
		sleep(ctx, v.duration("for"))
	})
	tp, err := build(v, seed)
	if err != nil {
		return nil, err
	}
	p.timedPlan = tp.(*timedPlan)
	return p, nil
}

func (p *cutLinkPlan) attach(px *proxies) {
	p.proxies = px
	px.want(p.node)
}

// proxied is a plan that needs proxies in front of some nodes.
type proxied interface {
	attach(*proxies)
}

func (p *latencyPlan) attach(px *proxies) {
	p.proxies = px
	px.want(p.node)
}

// partitionPlan is the holder plan of partition, which needs proxies.
type partitionPlan struct{ *holderPlan }

func (p partitionPlan) attach(px *proxies) { px.want(p.trig.node) }

func newPartition(v values, seed uint64) (plan, error) {
	p, err := holder(locks.Business, partition)(v, seed)
	if err != nil {
		return nil, err
	}
	return partitionPlan{p.(*holderPlan)}, nil
}
