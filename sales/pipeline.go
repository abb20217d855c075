package sales

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lockbench/lockbench/workload"
	"github.com/redis/go-redis/v9"
)

// pipelineConns is how many of a node's connections carry its pipeline:
// enough that a batch fills while another is on its round trip (1 to 8
// sold alike, docs/measurements.md).
const pipelineConns = 4

// pipeline sends a node's buyers' atomic scripts in batches
// (workload.Workload.Pipeline): whatever calls are waiting when one of
// its connections is free, up to size, go out in one round trip. Each
// call is recorded by its buyer as it would be alone, from its start to
// its own reply; the server runs it somewhere in between.
type pipeline struct {
	c     *redis.Client
	size  int
	calls chan *pipedCall
	stop  chan struct{}
	done  sync.WaitGroup
}

// The states of a pipedCall: waiting to be sent, taken into a batch, or
// given up by its buyer first (then never sent).
const (
	callQueued int32 = iota
	callTaken
	callAbandoned
)

// pipedCall is one buyer's call of the atomic script.
type pipedCall struct {
	keys  []string
	user  string
	state atomic.Int32
	vals  []int64
	err   error
	done  chan struct{} // closed when vals and err are set
}

// newPipeline is a pipeline of up to size calls a round trip over c; its
// calls wait until start.
func newPipeline(c *redis.Client, size int) *pipeline {
	return &pipeline{c: c, size: size, calls: make(chan *pipedCall, size*pipelineConns), stop: make(chan struct{})}
}

// start sends the pipeline's calls from pipelineConns goroutines, each
// started by spawn (workload.Node.Go).
func (p *pipeline) start(spawn func(func())) *pipeline {
	for range pipelineConns {
		p.done.Add(1)
		spawn(func() {
			defer p.done.Done()
			p.loop()
		})
	}
	return p
}

// close stops the pipeline once its buyers are done (Seller.Close): it
// waits for a batch on its way, then answers any call still queued as
// not sent.
func (p *pipeline) close() {
	close(p.stop)
	p.done.Wait()
	for {
		select {
		case c := <-p.calls:
			if c.state.CompareAndSwap(callQueued, callAbandoned) {
				c.err = fmt.Errorf("%w: the pipeline stopped", workload.ErrNotSent)
				close(c.done)
			}
		default:
			return
		}
	}
}

// call runs the script for user on k through the pipeline. A call its
// buyer gave up before a batch took it was not sent (workload.ErrNotSent);
// one given up after has an unknown outcome, as a command alone would.
func (p *pipeline) call(ctx context.Context, k itemKeys, user string) ([]int64, error) {
	c := &pipedCall{keys: []string{k.stock, k.orders}, user: user, done: make(chan struct{})}
	select {
	case p.calls <- c:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", workload.ErrNotSent, context.Cause(ctx))
	case <-p.stop:
		return nil, fmt.Errorf("%w: the pipeline stopped", workload.ErrNotSent)
	}
	select {
	case <-c.done:
		return c.vals, c.err
	case <-ctx.Done():
		select {
		case <-c.done: // answered as the buyer gave up: the answer stands
			return c.vals, c.err
		default:
		}
		if c.state.CompareAndSwap(callQueued, callAbandoned) {
			return nil, fmt.Errorf("%w: %v", workload.ErrNotSent, context.Cause(ctx))
		}
		return nil, context.Cause(ctx)
	}
}

// loop sends batches until the pipeline stops.
func (p *pipeline) loop() {
	batch := make([]*pipedCall, 0, p.size)
	for {
		batch = batch[:0]
		select {
		case c := <-p.calls:
			batch = take(batch, c)
		case <-p.stop:
			return
		}
	fill:
		for len(batch) < p.size {
			select {
			case c := <-p.calls:
				batch = take(batch, c)
			default:
				break fill
			}
		}
		if len(batch) > 0 {
			p.send(batch)
		}
	}
}

// take adds c to batch unless its buyer gave it up.
func take(batch []*pipedCall, c *pipedCall) []*pipedCall {
	if c.state.CompareAndSwap(callQueued, callTaken) {
		return append(batch, c)
	}
	return batch
}

// send runs batch in one round trip and answers each call. The batch is
// bounded by the client's timeouts (the pool's wait for a connection,
// then the read and write deadlines), not by any buyer's context: a
// buyer stops waiting on its own (call).
func (p *pipeline) send(batch []*pipedCall) {
	ctx := context.Background()
	cmds := make([]*redis.Cmd, len(batch))
	pipe := p.c.Pipeline()
	for i, c := range batch {
		cmds[i] = atomicScript.EvalSha(ctx, pipe, c.keys, c.user)
	}
	pipe.Exec(ctx) // each command holds its own error
	for i, c := range batch {
		cmd := cmds[i]
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			// The server has lost its scripts (restarted empty) and did
			// not run this call: Run loads the script again.
			cmd = atomicScript.Run(ctx, p.c, c.keys, c.user)
		}
		c.vals, c.err = cmd.Int64Slice()
		close(c.done)
	}
}
