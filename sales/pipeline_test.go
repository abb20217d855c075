package sales

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/servers"
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
	stocked(t, c, k, stock)
	h := &roundTrips{}
	c.AddHook(h)
	return c, h
}

// stocked sets stock units at k through c and loads the atomic script.
func stocked(t *testing.T, c *redis.Client, k itemKeys, stock int) {
	t.Helper()
	if err := c.Set(t.Context(), k.stock, stock, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := atomicScript.Load(t.Context(), c).Err(); err != nil {
		t.Fatal(err)
	}
}

// queued waits until n calls wait in p (they stay there until p
// starts); it fails the test if one of them came back before (returned).
func queued(t *testing.T, p *pipeline, n int, returned *atomic.Int64) {
	t.Helper()
	for len(p.calls) < n {
		if returned.Load() > 0 {
			t.Fatalf("a call came back before the pipeline started")
		}
		runtime.Gosched()
	}
}

// TestPipelineBatches queues a full pipeline's worth of calls before it
// starts, so that its batches fill: every call is answered from the
// server, the calls share few round trips (with each call alone it would
// be one each), and the stock sold is one unit per distinct buyer.
func TestPipelineBatches(t *testing.T) {
	for _, size := range []int{1, 4, 16} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			k := itemKeys{stock: "p:stock", orders: "p:orders"}
			c, trips := pipelineClient(t, k, 1000)
			p := newPipeline(c, size)
			calls := size * pipelineConns // what the queue holds
			var wg sync.WaitGroup
			var returned atomic.Int64
			answers := make([][]int64, calls)
			errs := make([]error, calls)
			for i := range calls {
				wg.Go(func() {
					answers[i], errs[i] = p.call(t.Context(), k, "u"+strconv.Itoa(i%(calls-1)))
					returned.Add(1)
				})
			}
			queued(t, p, calls, &returned)
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
			if n, most := trips.pipes.Load(), int64(pipelineConns-1+calls/size); trips.cmds.Load() != int64(calls) || n > most {
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
	var returned atomic.Int64
	go func() {
		_, err := p.call(ctx, k, "gone")
		returned.Add(1)
		gone <- err
	}()
	queued(t, p, 1, &returned)
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

// held holds a client's pipelines until it is let go, telling when one
// is held: a test acts while a batch is taken but not yet sent.
type held struct {
	in, out chan struct{}
}

func newHeld() *held { return &held{in: make(chan struct{}, 1), out: make(chan struct{})} }

func (h *held) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *held) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *held) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.in <- struct{}{}
		<-h.out
		return next(ctx, cmds)
	}
}

// TestPipelineGivenUpWhileSent: a buyer that stops waiting once a batch
// has taken its call does not know whether it ran: its outcome is
// unknown, never "not sent". The batch then runs it.
func TestPipelineGivenUpWhileSent(t *testing.T) {
	k := itemKeys{stock: "s:stock", orders: "s:orders"}
	c, _ := pipelineClient(t, k, 10)
	h := newHeld()
	c.AddHook(h)
	p := newPipeline(c, 8).start(func(f func()) { go f() })
	ctx, cancel := context.WithCancelCause(t.Context())
	gone := make(chan error)
	go func() {
		_, err := p.call(ctx, k, "taken")
		gone <- err
	}()
	<-h.in // the batch holds the call
	cancel(errors.New("the buyer crashed"))
	err := <-gone
	close(h.out)
	p.close()
	if err == nil || errors.Is(err, workload.ErrNotSent) {
		t.Errorf("a call given up while its batch was on its way: %v, want an unknown outcome", err)
	}
	if has, err := c.HExists(t.Context(), k.orders, "taken").Result(); err != nil || !has {
		t.Errorf("the batch did not run the call: order %v, %v", has, err)
	}
}

// TestPipelineLostScript: a server that lost its scripts (restarted
// empty, or flushed) answers NOSCRIPT, and did not run the call: the
// pipeline runs it again with the script's text.
func TestPipelineLostScript(t *testing.T) {
	k := itemKeys{stock: "n:stock", orders: "n:orders"}
	c, _ := pipelineClient(t, k, 10)
	if err := c.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	p := newPipeline(c, 8).start(func(f func()) { go f() })
	defer p.close()
	stock, sold, _, err := atomicResult(p.call(t.Context(), k, "u"))
	if err != nil || !sold || stock != 10 {
		t.Errorf("after the scripts were flushed: stock %d, sold %v, %v; want 10, sold", stock, sold, err)
	}
}

// breaking is a connection whose reads fail once broken is set: what
// was written reached the server, the answer never comes back.
type breaking struct {
	net.Conn
	broken *atomic.Bool
}

func (b breaking) Read(p []byte) (int, error) {
	if b.broken.Load() {
		return 0, errors.New("the link broke")
	}
	return b.Conn.Read(p)
}

// TestPipelineFailedRoundTrip: a round trip whose answer is lost after
// the batch was written fails every call it carried with an unknown
// outcome, never "not sent": the server ran them.
func TestPipelineFailedRoundTrip(t *testing.T) {
	k := itemKeys{stock: "f:stock", orders: "f:orders"}
	b := redistest.Embedded(t)
	o := b.Options()
	var broken atomic.Bool
	dial := o.Dialer
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return breaking{conn, &broken}, nil
	}
	c := redis.NewClient(o)
	defer c.Close()
	stocked(t, c, k, 10)
	p := newPipeline(c, 8).start(func(f func()) { go f() })
	defer p.close()
	broken.Store(true)
	if _, err := p.call(t.Context(), k, "u"); err == nil || errors.Is(err, workload.ErrNotSent) {
		t.Errorf("a call whose answer was lost: %v, want an unknown outcome", err)
	}
	// The server ran the call: its order appears, once the server has
	// read what was written (a bound on the looks, not on time).
	admin := redis.NewClient(b.Options())
	defer admin.Close()
	for looks := 0; ; looks++ {
		has, err := admin.HExists(t.Context(), k.orders, "u").Result()
		if err != nil {
			t.Fatal(err)
		}
		if has {
			break
		}
		if looks == 100000 {
			t.Fatal("the call whose answer was lost never ran on the server")
		}
		runtime.Gosched()
	}
}

// TestAtomicPipelineWiring: the atomic sale goes through a pipeline when
// the workload asks for one, and through none otherwise; its sale is
// then judged as TestSales judges it.
func TestAtomicPipelineWiring(t *testing.T) {
	b := redistest.Embedded(t)
	for _, size := range []int{0, 8} {
		spy := &sellerSpy{}
		_, err := workload.Run(t.Context(), workload.Config{
			Name: "atomic-" + strconv.Itoa(size), Sale: spy, Servers: &servers.Set{Redis: b},
			Workload: workload.Workload{Prefix: "wiring:", Clients: 40, Nodes: 2, Workers: 4, Stock: 20, Attempts: 1,
				Pipeline: size, Timeout: time.Minute, CommandTimeout: 5 * time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(spy.sellers) != 2 {
			t.Fatalf("pipeline %d: %d nodes started, want 2", size, len(spy.sellers))
		}
		for _, s := range spy.sellers {
			if piped := s.(atomicSeller).pipe != nil; piped != (size > 0) {
				t.Errorf("pipeline %d: a node's seller pipelines: %v", size, piped)
			}
		}
	}
}

// sellerSpy is the atomic sale, keeping the sellers its nodes start.
type sellerSpy struct {
	atomicSale
	mu      sync.Mutex
	sellers []workload.Seller
}

func (s *sellerSpy) StartNode(ctx context.Context, n *workload.Node) (workload.Seller, error) {
	sl, err := s.atomicSale.StartNode(ctx, n)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sellers = append(s.sellers, sl)
	return sl, err
}

// TestPipelineStopped: a call still queued when its pipeline stops was
// never sent, and says so, rather than waiting for an answer that will
// not come.
func TestPipelineStopped(t *testing.T) {
	k := itemKeys{stock: "c:stock", orders: "c:orders"}
	c, trips := pipelineClient(t, k, 10)
	p := newPipeline(c, 8) // never started
	got := make(chan error)
	var returned atomic.Int64
	go func() {
		_, err := p.call(context.Background(), k, "late")
		returned.Add(1)
		got <- err
	}()
	queued(t, p, 1, &returned)
	p.close()
	if err := <-got; !errors.Is(err, workload.ErrNotSent) {
		t.Errorf("a call queued when the pipeline stopped: %v, want ErrNotSent", err)
	}
	if n := trips.cmds.Load(); n != 0 {
		t.Errorf("%d scripts sent, want none", n)
	}
}
