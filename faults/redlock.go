package faults

import (
	"context"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
)

// restartPlan is the restart fault. On one server it restarts the server
// at scheduled instants. On several (redlock) it plays the case Kleppmann
// describes: the chosen node is cut off from a minority of the servers for
// the whole sale, so that its holders win a bare majority; when one of
// them is inside its critical section, one server of that majority
// restarts empty, and the holder is kept there until another client, which
// can now win a majority of its own, has read the stock.
type restartPlan struct {
	single *timedPlan
	holder *holderPlan
	node   int
}

func restart(v values, seed uint64) (plan, error) {
	single, err := restartMain(v, seed)
	if err != nil {
		return nil, err
	}
	node, err := v.node("node")
	if err != nil {
		return nil, err
	}
	if node < 0 {
		node = 0
	}
	p := &restartPlan{single: single.(*timedPlan), node: node}
	h := &holderPlan{v: v, fire: p.restartOne}
	h.trig.point = locks.Business
	h.trig.node = node
	h.trig.at = schedule(seed, v.count("count"), v.duration("after"), v.duration("every"))
	p.holder = h
	return p, nil
}

func (p *restartPlan) probe(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site) error {
	if c.Servers() < 2 {
		return nil
	}
	return p.holder.probe(ctx, in, c, at)
}

// run cuts the chosen node off the last servers (a minority) until the
// sale ends, or, on one server, runs the scheduled restarts.
func (p *restartPlan) run(ctx context.Context, in *Injector, c *workload.Controls) {
	if c.Servers() < 2 {
		p.single.run(ctx, in, c)
		return
	}
	for i := c.Quorum(); i < c.Servers(); i++ {
		c.CutServer(p.node, i, true)
	}
	<-ctx.Done()
	for i := c.Quorum(); i < c.Servers(); i++ {
		c.CutServer(p.node, i, false)
	}
}

// restartOne restarts the last server of the holder's bare majority (never
// the main one, which holds the inventory), then waits for a second
// client to read the stock.
func (p *restartPlan) restartOne(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site, v values) error {
	end := record(c, "restart", at.Node, at.Client, v)
	defer end()
	if err := c.RestartServerAt(ctx, c.Quorum()-1); err != nil {
		return nil // nothing was injected: the run goes on
	}
	in.catches.wait(ctx, locks.Business, []int32{at.Client}, false, v.duration("for"))
	return ctx.Err()
}
