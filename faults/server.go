package faults

import (
	"context"

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

// clockSkew moves one node's clock for the rest of the sale.
func clockSkew(v values, _ uint64) (plan, error) {
	node, err := v.node("node")
	if err != nil {
		return nil, err
	}
	if node < 0 {
		node = v.env.Nodes - 1
	}
	return &timedPlan{v: v, at: []int64{int64(v.duration("after"))}, fire: func(ctx context.Context, _ *Injector, c *workload.Controls, v values) {
		end := record(c, "clock-skew", node, -1, v)
		defer end()
		c.SkewClock(node, v.duration("offset"))
		<-ctx.Done()
		c.SkewClock(node, 0)
	}}, nil
}

// serverPause stops the server from answering.
func serverPause(v values, seed uint64) (plan, error) {
	at := schedule(seed, v.count("count"), v.duration("after"), v.duration("every"))
	return &timedPlan{v: v, at: at, fire: func(ctx context.Context, _ *Injector, c *workload.Controls, v values) {
		d := v.duration("for")
		end := record(c, "server-pause", -1, -1, v)
		defer end()
		if c.PauseServer(ctx, d) == nil {
			sleep(ctx, d)
		}
	}}, nil
}

// restartMain restarts the (main) server without persistence.
func restartMain(v values, seed uint64) (plan, error) {
	at := schedule(seed, v.count("count"), v.duration("after"), v.duration("every"))
	return &timedPlan{v: v, at: at, fire: func(ctx context.Context, _ *Injector, c *workload.Controls, v values) {
		end := record(c, "restart", -1, -1, v)
		defer end()
		c.RestartServer(ctx)
	}}, nil
}

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
