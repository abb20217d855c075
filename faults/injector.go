package faults

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/ctxtime"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
)

// plan is one fault's injections in one run.
type plan interface {
	// probe is called at every probe point a client passes; a plan that
	// fires there blocks or returns the error that crashes the client.
	probe(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site) error
	// run drives the plan's scheduled injections until ctx ends.
	run(ctx context.Context, in *Injector, c *workload.Controls)
}

// Injector is the faults of one run. It implements workload.Injector, and
// workload.Router when a fault needs a proxy in front of a node. Close it
// after the run.
type Injector struct {
	plans   []plan
	catches catches
	proxies *proxies // nil unless a fault needs them
}

// New prepares the injections of specs for one run. It fails with
// ErrUnavailable when what the run's faults reach cannot take one of
// them, and with ErrParam when a parameter does not fit the run (a node
// that does not exist).
func New(specs []Spec, env Env, reach workload.Reach) (*Injector, error) {
	in := &Injector{}
	for i, s := range specs {
		if err := s.Fault.Available(reach); err != nil {
			return nil, err
		}
		p, err := s.Fault.plan(s, env, streamSeed(env.Seed, s.Fault.Name(), i))
		if err != nil {
			in.Close()
			return nil, err
		}
		if pp, ok := p.(proxied); ok {
			if in.proxies == nil {
				in.proxies = newProxies()
			}
			pp.attach(in.proxies)
		}
		in.plans = append(in.plans, p)
	}
	return in, nil
}

// streamSeed gives each entry of --faults its own random stream, so that
// adding a fault does not move the schedule of another.
func streamSeed(seed uint64, name string, i int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return seed ^ h.Sum64() ^ uint64(i)*0x9e3779b97f4a7c15
}

// Probe implements workload.Injector.
func (in *Injector) Probe(ctx context.Context, c *workload.Controls, at workload.Site) error {
	// A client a fault caught is part of that fault's interleaving: no
	// fault strikes it again at the same point (with count=all, the next
	// holder that until=next lets write would be paused in turn).
	if caught, err := in.catches.offer(ctx, at); caught || err != nil {
		return err
	}
	for _, p := range in.plans {
		if err := p.probe(ctx, in, c, at); err != nil {
			return err
		}
	}
	return nil
}

// Run implements workload.Injector.
func (in *Injector) Run(ctx context.Context, c *workload.Controls) {
	var wg sync.WaitGroup
	for _, p := range in.plans {
		wg.Add(1)
		c.Go(func() {
			defer wg.Done()
			p.run(ctx, in, c)
		})
	}
	wg.Wait()
	if in.proxies != nil {
		in.proxies.heal()
	}
}

// Route implements workload.Router: a node a proxied fault strikes dials
// its proxy.
func (in *Injector) Route(node int, addr string) (string, error) {
	if in.proxies == nil || !in.proxies.wants(node) {
		return addr, nil
	}
	return in.proxies.start(node, addr)
}

// Relay implements workload.Relay: a proxy listening at listen for node's
// instance of a service under test, to upstream (its Redis), for the
// whole run; the faults that act on node's link act on it.
func (in *Injector) Relay(node int, listen, upstream string) error {
	if in.proxies == nil {
		in.proxies = newProxies()
	}
	return in.proxies.startAt(node, listen, upstream)
}

// Close stops the proxies, if any.
func (in *Injector) Close() error {
	if in.proxies != nil {
		in.proxies.close()
	}
	return nil
}

// schedule returns count arming instants (ns since the sale's start): the
// first at after plus up to after again, then every apart plus up to a
// quarter of every, all drawn from seed.
func schedule(seed uint64, count int, after, every time.Duration) []int64 {
	rng := rand.New(rand.NewPCG(seed, seed>>32|1))
	jitter := func(d time.Duration) time.Duration {
		if d <= 0 {
			return 0
		}
		return time.Duration(rng.Int64N(int64(d)))
	}
	at := make([]int64, count)
	t := after + jitter(after)
	for i := range at {
		at[i] = int64(t)
		t += every + jitter(every/4)
	}
	return at
}

// trigger fires a holder fault: armed at scheduled instants, each arming
// fires once, at the first matching probe after it; with all, the one
// arming fires at every matching probe after it, until until when set.
type trigger struct {
	point locks.Point
	node  int // -1: any node
	at    []int64
	all   bool
	until int64 // with all: the instant strikes end (ns since the sale's start); 0: never
	next  atomic.Int32
}

// claim reports whether the probe at site, now, takes the next injection.
func (t *trigger) claim(now int64, site workload.Site) bool {
	if site.Point != t.point || (t.node >= 0 && site.Node != t.node) {
		return false
	}
	if t.all {
		return now >= t.at[0] && (t.until == 0 || now < t.until)
	}
	for {
		i := t.next.Load()
		if int(i) >= len(t.at) || now < t.at[i] {
			return false
		}
		if t.next.CompareAndSwap(i, i+1) {
			return true
		}
	}
}

// sleep waits d or until ctx ends.
var sleep = ctxtime.Sleep

// at runs f at instant ns of the sale (ns since its start).
func waitUntil(ctx context.Context, c *workload.Controls, ns int64) error {
	if d := time.Duration(ns - c.Now()); d > 0 {
		return sleep(ctx, d)
	}
	return ctx.Err()
}

// record logs an injection that starts now and returns a function that
// ends it.
func record(c *workload.Controls, name string, node int, client int32, v values) func() {
	i := c.Record(history.Fault{Name: name, Node: node, Client: client, Start: c.Now(), Params: v.params()})
	return func() { c.Finish(i) }
}

// catches lets a fault wait for another client to walk into a point (a
// second holder entering its critical section), and hold it there.
type catches struct {
	n    atomic.Int32 // len(list), read without the lock on the hot path
	mu   sync.Mutex
	list []*catch
}

type catch struct {
	point  locks.Point
	except []int32
	only   int32         // the one client to catch, or -1 for any but except
	got    chan int32    // receives the caught client
	hold   chan struct{} // closed to let the caught client go; nil: do not hold
}

// offer gives a probe to the waiting catches and reports whether one
// caught the client; a client caught with hold blocks until it is let go.
func (cs *catches) offer(ctx context.Context, at workload.Site) (bool, error) {
	if cs.n.Load() == 0 {
		return false, nil
	}
	cs.mu.Lock()
	var hit *catch
	for i, c := range cs.list {
		if c.point == at.Point && !slices.Contains(c.except, at.Client) && (c.only < 0 || c.only == at.Client) {
			hit = c
			cs.list = slices.Delete(cs.list, i, i+1)
			cs.n.Store(int32(len(cs.list)))
			break
		}
	}
	cs.mu.Unlock()
	if hit == nil {
		return false, nil
	}
	hit.got <- at.Client
	if hit.hold == nil {
		return true, nil
	}
	select {
	case <-hit.hold:
		return true, nil
	case <-ctx.Done():
		return true, context.Cause(ctx)
	}
}

// errNoneCame is returned by wait when no client came in time.
var errNoneCame = errors.New("faults: no client came")

// wait returns the next client other than except that reaches point,
// within bound. With hold, that client stays in the probe until release
// is called (release is safe to call more than once, and is a no-op
// without hold).
func (cs *catches) wait(ctx context.Context, point locks.Point, except []int32, hold bool, bound time.Duration) (client int32, release func(), err error) {
	return cs.await(ctx, cs.expect(point, except, -1, hold), bound)
}

// expect sets a catch for the next client that reaches point: only, when
// it is not -1, else any client but except. await waits for it; setting
// it first lets a fault free the client it expects without a race.
func (cs *catches) expect(point locks.Point, except []int32, only int32, hold bool) *catch {
	c := &catch{point: point, except: except, only: only, got: make(chan int32, 1)}
	if hold {
		c.hold = make(chan struct{})
	}
	cs.mu.Lock()
	cs.list = append(cs.list, c)
	cs.n.Store(int32(len(cs.list)))
	cs.mu.Unlock()
	return c
}

// await returns the client c caught within bound (see wait).
func (cs *catches) await(ctx context.Context, c *catch, bound time.Duration) (client int32, release func(), err error) {
	var once sync.Once
	release = func() {
		if c.hold != nil {
			once.Do(func() { close(c.hold) })
		}
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case k := <-c.got:
		return k, release, nil
	case <-t.C:
		err = errNoneCame
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	cs.mu.Lock()
	if i := slices.Index(cs.list, c); i >= 0 {
		cs.list = slices.Delete(cs.list, i, i+1)
		cs.n.Store(int32(len(cs.list)))
		cs.mu.Unlock()
		return -1, release, err
	}
	cs.mu.Unlock()
	// Caught just as the wait ended: take it.
	return <-c.got, release, nil
}
