package workload

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/health"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/cpushare"
	"github.com/lockbench/lockbench/internal/ctxtime"
	"github.com/lockbench/lockbench/internal/monoclock"
	"github.com/lockbench/lockbench/internal/safego"
	"github.com/lockbench/lockbench/locks"
	"github.com/redis/go-redis/v9"
)

// Workload is the shape of a sale: buyers, nodes, stock, arrivals, the
// lease and the bounds on it (harness.Workload is this type).
type Workload struct {
	// Clients is the number of buyers (source 003: 20,000).
	Clients int
	// Nodes is the number of service instances (source 003: two).
	Nodes int
	// Workers bounds each node's request pool (Tomcat's default is 200);
	// zero gives every buyer its own goroutine.
	Workers int
	// Pool is each node's connection pool size; zero gives one connection
	// per worker, so that no worker waits for a connection (see PoolSize).
	Pool int
	// Pipeline lets up to this many of a node's buyers' commands share
	// one round trip, for a sale whose attempts are one command each
	// (Pipeliner); zero sends each command on its own.
	Pipeline int
	// Stock is the initial inventory (source 003: 5,000).
	Stock int64
	// Attempts is how many purchases a buyer tries before giving up.
	Attempts int
	// Ramp spreads the buyers' arrivals evenly over this window; zero is
	// a burst. Rate, when set, takes its place.
	Ramp time.Duration
	// Rate is buyers per second of an open arrival model: they keep
	// arriving at this rate whatever the system does, and their latency
	// counts from their scheduled arrival. Zero uses Ramp. See Arrivals.
	Rate float64
	// TTL is the lock lease; zero uses the implementation's own (locks.Info.DefaultTTL).
	TTL time.Duration
	// Hold is the business step inside the critical section, between the
	// read and the write.
	Hold time.Duration
	// Reentry makes each holder acquire its lock again this many levels
	// deep inside the critical section (source 003's testLock).
	Reentry int
	// Timeout bounds the whole sale; a run cut by it is a liveness failure.
	Timeout time.Duration
	// CommandTimeout bounds each command to a server (read and write
	// deadline); a command that runs out has an unknown outcome. Zero
	// means 3 s, go-redis's default.
	CommandTimeout time.Duration
	// Prefix is put before every key; the run adds the impl's name to it.
	Prefix string
	// Force deletes keys (or tables) a previous run left instead of
	// refusing to run.
	Force bool
	// Items is how many products are on sale, each with Stock units, its
	// own counter, orders and lock key; zero or one is the sources' one
	// counter. Buyers' items are drawn from Seed.
	Items int
	// Cart is the most items one buyer takes (1 to Cart, drawn from
	// Seed), all or none; zero or one is one item. Several need a sale
	// that can lock them together (multi) or none at all.
	Cart int
	// Reads is the percentage of buyers who only read an item's stock
	// (the product page), under the read lock of a lock that has one.
	Reads int
	// Seed draws each buyer's items and whether it only reads.
	Seed uint64
}

// PoolSize is each node's connection pool size: Pool, or one connection
// per worker when Pool is zero (64 when every buyer has a goroutine of its
// own). A worker that waits for a connection costs the node a wake-up
// per command besides the wait itself.
func (w Workload) PoolSize() int {
	switch {
	case w.Pool > 0:
		return w.Pool
	case w.Workers > 0:
		return w.Workers
	}
	return 64
}

// DatabasePool is each node's pool size for a store that counts its
// connections against a server-wide limit (MySQL's max_connections, 151
// by default; PostgreSQL's, 100): Pool, or 16, which two nodes with a
// pool each for data and locks keep within either default.
func (w Workload) DatabasePool() int {
	if w.Pool > 0 {
		return w.Pool
	}
	return 16
}

// Config describes one flash sale against one implementation.
type Config struct {
	// Name is the implementation's name, for the history and the keys.
	Name string
	// Sale is the implementation's sale protocol.
	Sale Sale
	// Servers are the servers the sale runs on; it uses those its Needs
	// name.
	Servers *servers.Set
	// Workload is the sale's shape.
	Workload
	// Injector, if set, injects faults.
	Injector Injector
	// Progress, if set, is called a few times a second while the sale runs.
	Progress func(Progress)
	// Launcher, if set, runs each node in a process of its own (or a
	// container, or a pod) that it starts; the run coordinates them.
	// Without one, nodes are goroutines of this process.
	Launcher Launcher
	// Listen is where the coordinator of a Launcher's nodes listens for
	// them: 127.0.0.1 on a port of the system's choice when empty.
	Listen string
	// NodeSecret is the run's secret, which each of a Launcher's nodes
	// proves it holds before it is given anything (see nodeproto.Accept):
	// a fresh one when empty, given to the nodes the coordinator starts
	// in their environment; nodes others start (Remote) need it given,
	// as their starter gives it to them.
	NodeSecret string
	// Lease is the lease the lock runs with (TTL, or the implementation's
	// default when TTL is zero); zero for a sale without one. It goes in
	// the history's header, where the harness's health is judged by it.
	Lease time.Duration
	// ClockError is the least clock error the history is declared to
	// have (history.Header.ClockError): a floor on what the coordinator
	// measures of remote nodes' clocks, for drift it cannot measure. The
	// history's ClockMeasured is what the run measured above it: a floor
	// is the caller's, and given again to check the history.
	ClockError time.Duration
}

// Injector injects faults into a run; the faults package implements it.
type Injector interface {
	// Probe is called at each probe point a client passes. It may block
	// (a pause) or return an error (a crash): the client then stops where
	// it is, as a dead process would.
	Probe(ctx context.Context, c *Controls, at Site) error
	// Run drives scheduled injections through c until ctx ends.
	Run(ctx context.Context, c *Controls)
}

// Router is an Injector that puts something (a fault proxy) between a
// node and the server: Route returns the address node should dial
// instead of addr.
type Router interface {
	Route(node int, addr string) (string, error)
}

// Relay is an Injector that runs, for the whole run, a proxy listening at
// an address a service under test was told to dial for its Redis, so that
// its faults can act on that instance's link.
type Relay interface {
	Relay(node int, listen, upstream string) error
}

// Site is where a client is when a probe fires.
type Site struct {
	Node   int
	Client int32
	Point  locks.Point
}

type clientKey struct{}

// clientOf returns the client a context belongs to, or -1.
func clientOf(ctx context.Context) int32 {
	if c, ok := ctx.Value(clientKey{}).(int32); ok {
		return c
	}
	return -1
}

// run is one sale in progress.
type run struct {
	cfg  Config
	keys keys
	// cart is the most items an attempt takes: the history slots each
	// attempt has.
	cart int
	// arrivals is the sale's arrival process (Workload.Arrivals).
	arrivals Arrivals
	// base is the sale's start on the machine's monotonic clock
	// (monoclock): every instant of the history counts from it, in this
	// process and in the node processes alike. started is the same
	// instant on the wall clock, for progress.
	base    int64
	started time.Time
	// shift moves this process's clock readings (a node's residual clock
	// error, injected by tests of the clock-error bound); zero otherwise.
	shift int64
	// stride maps a client to its slots in ops, kill and crashAt: client
	// c has slot c/stride (a node process keeps only its own clients',
	// every stride-th).
	stride int
	nodes  []*node
	ops    []history.Op
	kill   []atomic.Pointer[context.CancelCauseFunc]
	// crashAt is when a fault killed each client: the instant it stopped
	// holding anything, whenever it noticed.
	crashAt []atomic.Int64

	arrived, finished, sold atomic.Int64
	faults                  faultLog
	admin                   *redis.Client // the run's own client: set-up, audit, faults
	inv                     Inventory
	store                   servers.Server // the server that holds the inventory
	// unread is set when a service under test answered a purchase
	// without the stock it read.
	unread atomic.Bool
	// answered counts the purchases a service under test answered in the
	// protocol; firstBad is its first answer that was not.
	answered atomic.Int64
	firstBad atomic.Pointer[string]
	// broken counts the answers of a service under test outside its
	// protocol (Node.BrokeProtocol); firstBroken says the first.
	broken      atomic.Int64
	firstBroken atomic.Pointer[string]
	// instances are the processes of a service under test.
	instances *instances
	controls  *Controls
	cluster   clusterRun // the servers of a multi-server lock
	// coord runs the nodes as processes of their own (Config.Launcher);
	// nil when they run in this process.
	coord *coordinator
	// link is, in a node process, its side of the link to the
	// coordinator.
	link *nodeSide
	// health measures the harness's own health while the sale runs.
	health *health.Monitor
	// quietUntil is when (Unix ns) a fault that pauses or restarts the
	// server ends: the watch does not count the server silent before.
	quietUntil atomic.Int64
	// abort ends the run's context for a panic in one of its goroutines
	// (crash); panicked is the first such panic.
	abort    context.CancelCauseFunc
	panicked atomic.Pointer[error]
}

// goSafe runs f in a goroutine of the run's: a panic in it ends the run
// (crash), never the process.
func (r *run) goSafe(f func()) { safego.Go(r.crash, f) }

// goGroup is goSafe for a goroutine wg waits for (wg.Add done by the
// caller): wg.Done comes after a panic is reported.
func (r *run) goGroup(wg *sync.WaitGroup, f func()) { safego.GoGroup(wg, r.crash, f) }

// crash ends the run for err, a panic in one of its goroutines (a bug of
// lockbench's, or of the lock or sale it runs): the first is kept, the
// run's context ends, and Run returns what was recorded with the panic
// (panicErr). In a node process, the coordinator is told.
func (r *run) crash(err error) {
	r.panicked.CompareAndSwap(nil, &err)
	if r.abort != nil {
		r.abort(err)
	}
	if r.link != nil {
		r.link.panicked(err)
	}
}

// panicErr is the run's first panic (safego.ErrPanic), nil when none.
func (r *run) panicErr() error {
	if p := r.panicked.Load(); p != nil {
		return fmt.Errorf("workload: %s: a goroutine of the run panicked: %w", r.cfg.Name, *p)
	}
	return nil
}

func (r *run) now() int64 { return monoclock.Now() + r.shift - r.base }

// slot is client c's index in ops (times the slots per client), kill
// and crashAt.
func (r *run) slot(c int32) int { return int(c) / r.stride }

// slots returns client c's history slots: every attempt's, each with one
// Op per item of its cart.
func (r *run) slots(c int32) []history.Op {
	per := r.cfg.Attempts * r.cart
	i := r.slot(c) * per
	return r.ops[i : i+per]
}

// initSlots makes client c's first slot ready for its arrival.
func (r *run) initSlots(c int32, node int) {
	op := &r.slots(c)[0]
	*op = history.Op{Client: c, Node: int16(node), Stock: history.NoStock}
	op.Arrival = r.arrival(int(c))
	if len(r.keys.locks) > 1 {
		items, _ := r.cartOf(c)
		op.Item = int32(items[0])
	}
}

// Run sells the stock to the buyers and returns what happened. The error
// is for infrastructure only (servers.ErrUnreachable, ErrPrefixInUse); a lock that
// fails shows in the history, not here. When ctx ends or Timeout passes
// the sale is cut short, and the history holds what was recorded.
func Run(ctx context.Context, cfg Config) (*history.History, error) {
	if cfg.Sale == nil {
		return nil, errors.New("workload: no sale")
	}
	if missing := cfg.Servers.Missing(cfg.Sale.Needs().Without(servers.KindRedisServers)); len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s runs on %s", servers.ErrMissing, cfg.Name, missing)
	}
	if err := Supports(cfg.Sale, cfg.Workload); err != nil {
		return nil, err
	}
	if cfg.Launcher != nil {
		if err := SupportsNodes(cfg.Launcher.Mode(), cfg.Name, cfg.Sale, cfg.Servers); err != nil {
			return nil, err
		}
	}
	r := &run{cfg: cfg, keys: newKeys(cfg.Prefix+cfg.Name+":", cfg.Items), cart: max(1, cfg.Cart), instances: newInstances(cfg.Servers), arrivals: cfg.Arrivals(), stride: 1}
	r.controls = &Controls{r: r}
	ctx, r.abort = context.WithCancelCause(ctx)
	defer r.abort(nil)
	reach, err := ReachOf(cfg.Servers, cfg.Sale)
	if err != nil {
		return nil, err
	}
	r.store = reach.Store
	if cfg.Sale.Needs().Has(servers.KindRedis) || cfg.Servers.Redis != nil && cfg.Sale.Needs().Has(servers.KindTarget) {
		r.admin = servers.NewClient(cfg.Servers.Redis, cfg.Servers.Redis.Options())
		defer r.admin.Close()
	}
	if k := cfg.Servers.TargetLockKey; k != "" && cfg.Sale.Needs().Has(servers.KindTarget) {
		r.keys.lock = k // the service's lock, for the faults that reach it
		r.keys.locks[0] = k
	}
	if err := r.relay(); err != nil {
		return nil, err
	}
	if r.inv, err = cfg.Sale.Inventory(Env{Servers: cfg.Servers, Redis: r.admin, Keys: r.keys.export(), Workload: cfg.Workload}); err != nil {
		return nil, err
	}
	backend := r.store.Name()
	setup, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cleanupServers, err := r.claimServers(setup)
	defer cleanupServers()
	if err != nil {
		return nil, err
	}
	if err := r.inv.Prepare(setup, cfg.Stock, cfg.Force); err != nil {
		return nil, err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		r.inv.Clear(c)
	}()
	if err := r.startNodes(setup); err != nil || r.panicErr() != nil {
		r.stopNodes()
		return nil, cmp.Or(r.panicErr(), err)
	}
	defer r.stopNodes()

	r.allocSlots(cfg.Clients)
	for i := 0; i < cfg.Clients; i++ {
		r.initSlots(int32(i), i%cfg.Nodes)
	}

	// The coordinator of node processes on this machine runs on its
	// share of the CPUs while the sale runs and the machine is quiet, as
	// its nodes do (internal/cpushare), unless it hosts the server.
	onShare := cpushare.New(r.share())
	defer onShare.End()
	onShare.Prime(func() (float64, bool) { return health.OthersRunning(r.localNodes()) })
	r.started, r.base = time.Now(), monoclock.Now()
	r.health = health.Start(r.now, r.localNodes, onShare.Observe)
	clockSteps := r.watchClock()
	if r.coord != nil {
		r.coord.start()
	}
	timed, stop := context.WithTimeout(ctx, cfg.Timeout)
	defer stop()
	sale, lose := context.WithCancelCause(timed)
	defer lose(nil)
	if r.coord != nil {
		r.coord.cutBy(sale, lose)
	}
	watching, stopWatch := context.WithCancel(sale)
	watched := make(chan struct{})
	r.goSafe(func() {
		defer close(watched)
		r.watch(watching, lose)
	})
	cutShort := r.drive(sale)
	stopWatch()
	<-watched
	duration := r.now()
	hl := r.health.Stop(-1)
	onShare.End() // the checks run on every CPU
	hl.ServerClockStepMax = int64(clockSteps())
	var nodeErr error
	if r.coord != nil {
		nodeErr = r.coord.finish()
		r.coord.mergeHealth(&hl)
	}
	var cut history.Cut
	switch {
	case !cutShort:
	case ctx.Err() != nil:
		cut = history.CutInterrupt
	case errors.Is(context.Cause(sale), errServerLost), lostNode(context.Cause(sale)):
		cut = history.CutServerLost
	default:
		cut = history.CutTimeout
	}

	h := &history.History{
		Header: history.Header{
			Schema:   history.SchemaVersion,
			Impl:     cfg.Name,
			Backend:  backend,
			Nodes:    cfg.Nodes,
			Clients:  cfg.Clients,
			Stock:    cfg.Stock,
			Attempts: cfg.Attempts,
			Duration: duration,
			Reads:    cfg.Reads,
			CutShort: cutShort,
			CutBy:    cut,
			Lease:    int64(cmp.Or(cfg.Lease, cfg.TTL)),
			Rate:     cfg.Rate,
			Health:   &hl,
		},
		Faults: r.faults.list(),
		Ops:    r.compact(),
	}
	if len(r.keys.locks) > 1 {
		h.Header.Items, h.Header.Cart = len(r.keys.locks), r.cart
	}
	g := cfg.Sale.Guard()
	h.Header.Lockless, h.Header.Fenced, h.Header.Promises = !g.Lock, g.Fenced, g.Promises
	h.Header.Unread = r.unread.Load()
	for _, n := range r.nodes {
		h.Header.Commands += n.commands.Load()
	}
	if r.coord != nil {
		h.Header.ClockError = r.coord.clockError()
		if h.Header.ClockError > int64(cfg.ClockError) {
			// Measured by the run, above the floor it was given: `check`
			// takes it without being told (history.CheckClock).
			h.Header.ClockMeasured = h.Header.ClockError
		}
	}
	ac, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var lost error
	switch {
	case lostNode(context.Cause(sale)):
		lost = context.Cause(sale)
	case cut == history.CutServerLost:
		lost = fmt.Errorf("%w: %s stopped answering for %v during the sale", servers.ErrUnreachable, backend, r.lostAfter())
	case nodeErr != nil:
		lost = nodeErr
	}
	if err := r.protocolError(); err != nil && lost == nil {
		lost = err
	}
	if err := r.panicErr(); err != nil {
		lost = err // the run's own failure comes before what it caused
	}
	final, err := r.inv.Audit(ac)
	if err != nil {
		// What was recorded stands: the history goes back whole, its
		// final state marked unknown, for the caller to judge and keep.
		h.Final = history.Final{Unknown: true}
		if lost != nil {
			return h, fmt.Errorf("%w; its final state could not be read either (%v)", lost, err)
		}
		return h, fmt.Errorf("%w: reading the final state: %v", servers.ErrUnreachable, err)
	}
	h.Final = final
	return h, lost
}

func (r *run) startNodes(ctx context.Context) error {
	if r.cfg.Launcher != nil {
		r.coord = newCoordinator(r)
		return r.coord.launch(ctx)
	}
	for i := 0; i < r.cfg.Nodes; i++ {
		n, err := r.startNode(ctx, i, newUUID())
		if n != nil {
			r.nodes = append(r.nodes, n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// newUUID is a node's random id.
func newUUID() string {
	var id [8]byte
	rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

// startNode starts node i: its clients of the servers, routed through
// the fault proxy when the injector has one, and its sale's state (its
// locks).
func (r *run) startNode(ctx context.Context, i int, uuid string) (*node, error) {
	n := &node{id: i, uuid: uuid}
	if r.cfg.Sale.Needs().Has(servers.KindRedis) {
		opts := r.cfg.Servers.Redis.Options()
		opts.PoolSize = r.cfg.PoolSize()
		if t := r.cfg.CommandTimeout; t > 0 {
			opts.ReadTimeout, opts.WriteTimeout = t, t
		}
		if rt, ok := r.cfg.Injector.(Router); ok {
			addr, err := rt.Route(i, opts.Addr)
			if err != nil {
				return n, fmt.Errorf("%w: node %d: %v", servers.ErrUnreachable, i, err)
			}
			opts.Addr = addr
		}
		n.client = servers.NewClient(r.cfg.Servers.Redis, opts)
		n.client.AddHook(hook{n})
		n.servers = r.serverClients(n, n.client)
		if rt, ok := r.cfg.Injector.(Router); ok {
			if err := r.routeServers(rt, n); err != nil {
				return n, fmt.Errorf("%w: node %d: %v", servers.ErrUnreachable, i, err)
			}
		}
	}
	seller, err := r.cfg.Sale.StartNode(ctx, &Node{r: r, n: n})
	if err != nil {
		return n, fmt.Errorf("%w: node %d: %v", servers.ErrUnreachable, i, err)
	}
	n.seller = seller
	if _, ok := seller.(Viewer); r.cfg.Reads > 0 && !ok {
		return n, fmt.Errorf("%w: %s shows no reader the stock", ErrWorkload, r.cfg.Name)
	}
	return n, nil
}

// routeServers puts the fault proxy between node n and every server of a
// lock on several (redlock), as between n and the main one: a fault on
// n's link (latency, partition, cut-link) reaches each of them. Each
// client beyond the main one is made again for the address the router
// gives, with its hook (the node's pause and counter, and its cut).
func (r *run) routeServers(rt Router, n *node) error {
	if len(n.servers) < 2 {
		return nil
	}
	cut := r.cluster.cut[len(r.cluster.cut)-1] // n's, made with its clients
	for j := 1; j < len(n.servers); j++ {
		opts := *n.servers[j].Options()
		addr, err := rt.Route(n.id, opts.Addr)
		if err != nil || addr == opts.Addr {
			return err
		}
		opts.Addr = addr
		c := redis.NewClient(&opts)
		c.AddHook(cutHook{hook: hook{n}, cut: cut[j]})
		n.servers[j].Close()
		n.servers[j] = c
	}
	return nil
}

func (r *run) stopNodes() {
	if r.coord != nil {
		r.coord.close()
	}
	for _, n := range r.nodes {
		if n.seller != nil {
			n.seller.Close()
		}
		closeServerClients(n)
		if n.client != nil {
			n.client.Close()
		}
	}
}

// prober returns the node's locks.Probe: the node's pause, then the injector.
func (r *run) prober(n *node) locks.Probe {
	return func(ctx context.Context, p locks.Point) error {
		return r.probe(ctx, n, p)
	}
}

func (r *run) probe(ctx context.Context, n *node, p locks.Point) error {
	if err := n.pause.wait(ctx); err != nil {
		return err
	}
	if r.cfg.Injector == nil {
		return nil
	}
	return r.cfg.Injector.Probe(ctx, r.controls, Site{Node: n.id, Client: clientOf(ctx), Point: p})
}

// drive runs the sale until every buyer is done or ctx ends, and reports
// whether it was cut short.
func (r *run) drive(ctx context.Context) (cutShort bool) {
	var clients sync.WaitGroup
	var workers sync.WaitGroup
	fctx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()
	if r.cfg.Injector != nil {
		workers.Add(1)
		r.goGroup(&workers, func() {
			r.cfg.Injector.Run(fctx, r.controls)
		})
	}
	if r.cfg.Progress != nil {
		workers.Add(1)
		r.goGroup(&workers, func() {
			r.tickProgress(fctx)
		})
	}
	if r.coord == nil {
		for _, n := range r.nodes {
			r.startWorkers(ctx, n, r.cfg.Clients/r.cfg.Nodes+1, &clients)
		}
	}

	// Each buyer is handed to its node at its scheduled arrival. A node's
	// queue holds all its buyers (or each has its own goroutine), so that
	// arrivals never wait for the system: a rate stays the rate however
	// far behind the system falls. Nodes in processes of their own keep
	// the schedule themselves when no fault is injected (see
	// coordinator.scheduled): the coordinator then only counts the
	// arrivals, a tally grain at a time.
	switch {
	case r.coord == nil:
		r.arrive(ctx, 0, 1, 0, func(c int32, late time.Duration) {
			r.health.Lag(late)
			r.serve(ctx, r.nodes[int(c)%r.cfg.Nodes], c, &clients)
		})
	case r.coord.scheduled():
		r.arrive(ctx, 0, 1, tallyGrain, func(int32, time.Duration) { r.coord.arrived() })
	default:
		r.arrive(ctx, 0, 1, 0, func(c int32, late time.Duration) {
			r.health.Lag(late)
			r.coord.deliver(ctx, c)
		})
	}
	for _, n := range r.nodes {
		if n.queue != nil {
			close(n.queue)
		}
	}
	clients.Wait()
	if r.coord != nil {
		r.coord.wait(ctx)
	}
	stopFaults()
	workers.Wait()
	if r.cfg.Progress != nil && r.panicErr() == nil {
		safego.Call(r.crash, func() { r.cfg.Progress(r.snapshot()) })
	}
	return ctx.Err() != nil
}

// arrive hands buyers first, first+step, ... to hand at their scheduled
// arrivals, each with how late it was handed, and counts them arrived;
// it returns when every one was handed or ctx ends. With a grain, it
// sleeps at least that long between hand-outs and then hands every buyer
// due together.
func (r *run) arrive(ctx context.Context, first, step int, grain time.Duration, hand func(c int32, late time.Duration)) {
	for i := first; i < r.cfg.Clients; i += step {
		if d := time.Duration(r.arrival(i) - r.now()); d > 0 {
			ctxtime.Sleep(ctx, max(d, grain))
		}
		if ctx.Err() != nil {
			return
		}
		r.arrived.Add(1)
		hand(int32(i), time.Duration(r.now()-r.arrival(i)))
	}
}

// tallyGrain is how often a coordinator whose nodes keep the schedule
// counts the arrivals: often enough for the progress line (four times a
// second), seldom enough to cost nothing.
const tallyGrain = 10 * time.Millisecond

// startWorkers starts node n's pool of Workers, whose queue holds up to
// size buyers; without Workers every buyer gets its own goroutine.
func (r *run) startWorkers(ctx context.Context, n *node, size int, clients *sync.WaitGroup) {
	if r.cfg.Workers <= 0 {
		return
	}
	n.queue = make(chan int32, size)
	for w := 0; w < r.cfg.Workers; w++ {
		clients.Add(1)
		r.goGroup(clients, func() {
			for c := range n.queue {
				r.client(ctx, n, c)
			}
		})
	}
}

// serve hands buyer c to node n: to a worker, or to a goroutine of its own.
func (r *run) serve(ctx context.Context, n *node, c int32, clients *sync.WaitGroup) {
	if n.queue != nil {
		n.queue <- c
		return
	}
	clients.Add(1)
	r.goGroup(clients, func() {
		r.client(ctx, n, c)
	})
}

// allocSlots makes room for the history of clients buyers.
func (r *run) allocSlots(clients int) {
	r.ops = make([]history.Op, clients*r.cfg.Attempts*r.cart)
	r.kill = make([]atomic.Pointer[context.CancelCauseFunc], clients)
	r.crashAt = make([]atomic.Int64, clients)
}

// compact drops the retry slots that were never used.
func (r *run) compact() []history.Op {
	out := r.ops[:0]
	for i := range r.ops {
		if r.ops[i].Attempt == 0 && r.ops[i].Arrival > 0 || r.ops[i].Start > 0 {
			out = append(out, r.ops[i])
		}
	}
	return out
}
