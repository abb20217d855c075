package sales

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/workload"
	"github.com/redis/go-redis/v9"
)

// roundTrips counts a client's pipelines and the commands they carried.
type roundTrips struct{ pipes, cmds atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipes.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// pipelineClient is a client of a fresh embedded server holding stock
// units at k, the atomic script loaded, and its round-trip counter.
func pipelineClient(t *testing.T, k itemKeys, stock int) (*redis.Client, *roundTrips) {
	t.Helper()
	b := redistest.Embedded(t)
	c := redis.NewClient(b.Options())
	t.Cleanup(func() { c.Close() })
	if err := c.Set(t.Context(), k.stock, stock, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := atomicScript.Load(t.Context(), c).Err(); err != nil {
		t.Fatal(err)
	}
	h := &roundTrips{}
	c.AddHook(h)
	return c, h
}

// queued waits until n calls wait in p (they block until p starts).
func queued(p *pipeline, n int) {
	for len(p.calls) < n {
		runtime.Gosched()
	}
}

// TestPipelineBatches queues a full pipeline's worth of calls before it
// starts, so that its batches fill: every call is answered from the
// server, the calls share few round trips (with each call alone it would
// be one each), and the stock sold is one unit per distinct buyer.
func TestPipelineBatches(t *testing.T) {
	for _, max := range []int{1, 4, 16} {
		t.Run(strconv.Itoa(max), func(t *testing.T) {
			k := itemKeys{stock: "p:stock", orders: "p:orders"}
			c, trips := pipelineClient(t, k, 1000)
			p := newPipeline(c, max)
			calls := max * pipelineConns // what the queue holds
			var wg sync.WaitGroup
			answers := make([][]int64, calls)
			errs := make([]error, calls)
			for i := range calls {
				wg.Go(func() {
					answers[i], errs[i] = p.call(t.Context(), k, "u"+strconv.Itoa(i%(calls-1)))
				})
			}
			queued(p, calls)
			p.start(func(f func()) { go f() })
			wg.Wait()
			p.close()
			sold, dup := 0, 0
			for i := range calls {
				stock, s, d, err := atomicResult(answers[i], errs[i])
				if err != nil || stock <= 0 {
					t.Fatalf("call %d: stock %d, %v", i, stock, err)
				}
				if s {
					sold++
				}
				if d {
					dup++
				}
			}
			// One user is drawn twice: one of the two calls is a duplicate.
			if sold != calls-1 || dup != 1 {
				t.Errorf("sold %d with %d duplicates, want %d and 1", sold, dup, calls-1)
			}
			left, err := c.Get(t.Context(), k.stock).Int()
			if err != nil || left != 1000-sold {
				t.Errorf("stock left %d (%v), want %d", left, err, 1000-sold)
			}
			// Every batch but the last of each connection is full.
			if n, most := trips.pipes.Load(), int64(pipelineConns-1+calls/max); trips.cmds.Load() != int64(calls) || n > most {
				t.Errorf("%d calls in %d round trips (%d commands), want at most %d", calls, n, trips.cmds.Load(), most)
			}
		})
	}
}

// TestPipelineGivenUp: a call whose buyer stops waiting before a batch
// takes it is never sent, and says so (workload.ErrNotSent); one answered
// is not affected.
func TestPipelineGivenUp(t *testing.T) {
	k := itemKeys{stock: "g:stock", orders: "g:orders"}
	c, trips := pipelineClient(t, k, 10)
	p := newPipeline(c, 8)
	ctx, cancel := context.WithCancelCause(t.Context())
	gone := make(chan error)
	go func() {
		_, err := p.call(ctx, k, "gone")
		gone <- err
	}()
	queued(p, 1)
	cancel(errors.New("the buyer crashed"))
	if err := <-gone; !errors.Is(err, workload.ErrNotSent) {
		t.Fatalf("a call given up in the queue: %v, want ErrNotSent", err)
	}
	p.start(func(f func()) { go f() })
	defer p.close()
	if _, sold, _, err := atomicResult(p.call(t.Context(), k, "kept")); err != nil || !sold {
		t.Fatalf("the next call: sold %v, %v", sold, err)
	}
	if n := trips.cmds.Load(); n != 1 {
		t.Errorf("%d scripts sent, want 1 (the call given up never leaves)", n)
	}
	if has, err := c.HExists(t.Context(), k.orders, "gone").Result(); err != nil || has {
		t.Errorf("the buyer that gave up has an order: %v, %v", has, err)
	}
}

// TestPipelineFailedRoundTrip: a round trip that fails (the server gone)
// fails every call it carried, none of them known not to have run.
func TestPipelineFailedRoundTrip(t *testing.T) {
	k := itemKeys{stock: "f:stock", orders: "f:orders"}
	c, _ := pipelineClient(t, k, 10)
	p := newPipeline(c, 8).start(func(f func()) { go f() })
	defer p.close()
	c.Close() // every later command fails: redis: client is closed
	_, err := p.call(t.Context(), k, "u")
	if err == nil || errors.Is(err, workload.ErrNotSent) {
		t.Errorf("a call on a failed round trip: %v, want an error of unknown outcome", err)
	}
}
