package workload

import (
	"bytes"
	"cmp"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/health"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/cpushare"
	"github.com/lockbench/lockbench/internal/monoclock"
	"github.com/lockbench/lockbench/nodeproto"
	"github.com/redis/go-redis/v9"
)

// NodeOptions are a node process's: where its coordinator is, which
// node it is, and how it finds the sale of an implementation by name.
type NodeOptions struct {
	// Coordinator is the coordinator's host:port.
	Coordinator string
	// Index is the node's index (a Kubernetes Indexed Job's
	// JOB_COMPLETION_INDEX).
	Index int
	// Token is what the coordinator that launched the node gave it; ""
	// for a node the coordinator did not start (remote).
	Token string
	// Secret is the run's secret, which the node proves it holds and
	// which pins the coordinator's TLS key (see nodeproto.Connect).
	Secret string
	// Sale returns the sale of the implementation the coordinator names
	// (the registry's; harness.ServeNode looks it up).
	Sale func(name string) (Sale, error)
	// ClockShift moves every instant the node records, not the readings
	// its clock is measured by: a clock error the coordinator cannot
	// see, for tests of the clock-error bound.
	ClockShift time.Duration
	// DialTimeout bounds the wait for the coordinator to answer; zero is
	// 30 s.
	DialTimeout time.Duration
	// CPUShare, when not 0, is the CPUs the node runs on while the sale
	// runs and other processes than its coordinator and fellow nodes
	// leave the machine quiet (internal/cpushare; a node its coordinator
	// started is given it in cpushare.Env).
	CPUShare int
}

// ErrCoordinatorGone is ServeNode's error when its coordinator went away
// before the sale ended: the node leaves, as a node never outlives its
// coordinator.
var ErrCoordinatorGone = errors.New("workload: the coordinator is gone")

// ServeNode runs one node of a sale whose coordinator runs elsewhere
// (Config.Launcher): it dials the coordinator, takes the sale it is
// given, serves the buyers it is sent, reports every attempt, and
// returns when the coordinator ends the sale or goes away.
func ServeNode(ctx context.Context, o NodeOptions) error {
	if err := nodeproto.CheckSecret(o.Secret); err != nil {
		return err
	}
	conn, err := dialCoordinator(ctx, o)
	if err != nil {
		return err
	}
	// Ctrl-C or SIGTERM of the node: its link ends, and so does the node.
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	conn.SetDeadline(time.Now().Add(cmp.Or(o.DialTimeout, 30*time.Second)))
	l, err := nodeproto.Connect(ctx, conn, o.Secret, &nodeproto.Message{Kind: nodeproto.Hello, Node: o.Index, Token: o.Token})
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCoordinatorGone, o.Coordinator, err)
	}
	conn.SetDeadline(time.Time{})
	defer l.Close()
	ns := &nodeSide{l: l, opts: o}
	defer func() { ns.share.End() }()
	return ns.serve(ctx)
}

// dialCoordinator dials until the coordinator answers or the bound
// passes (a pod may come up before its coordinator's Service does).
func dialCoordinator(ctx context.Context, o NodeOptions) (net.Conn, error) {
	bound := o.DialTimeout
	if bound <= 0 {
		bound = 30 * time.Second
	}
	deadline := time.Now().Add(bound)
	for {
		d := net.Dialer{Timeout: time.Second}
		conn, err := d.DialContext(ctx, "tcp", o.Coordinator)
		if err == nil {
			return conn, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("%w: dialing %s: %v", ErrCoordinatorGone, o.Coordinator, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nodeSide is a node process: its link, its run (of one node), and the
// attempt each of its buyers is at, for its probes' reports.
type nodeSide struct {
	l       *nodeproto.Link
	opts    NodeOptions
	r       *run
	n       *node
	current []atomic.Int32 // by slot: the attempt the buyer is at
	// acked is true when each start waits for the coordinator's ack
	// (Assignment.Probes).
	acked bool
	// mon measures the node process's health from go to stop.
	mon *health.Monitor
	// share keeps the node on its share of the CPUs from its setup to
	// its stop, on a primed window and then mon's samples; nil for every
	// CPU.
	share *cpushare.Share
}

// serve handles the coordinator's messages until the sale ends.
func (ns *nodeSide) serve(ctx context.Context) error {
	sale, endSale := context.WithCancelCause(ctx)
	defer endSale(nil)
	// arriving waits for the node's own arrivals, clients for its buyers.
	var arriving, clients sync.WaitGroup
	stats := make(chan struct{})
	var statsOnce sync.Once
	stopStats := func() { statsOnce.Do(func() { close(stats) }) }
	defer stopStats()
	stopped := false
	for {
		m, err := ns.l.Recv()
		if err != nil {
			if stopped {
				// The coordinator closes the link after the end.
				ns.r.stopNodes()
				return nil
			}
			// A node never outlives its coordinator: it leaves at once,
			// whatever its buyers wait for (a lock held by a node that is
			// frozen, say), and its process ends with them.
			endSale(ErrCoordinatorGone)
			return ErrCoordinatorGone
		}
		switch m.Kind {
		case nodeproto.Ping:
			ns.l.Send(&nodeproto.Message{Kind: nodeproto.Pong, ID: m.ID, T1: monoclock.Now()})
		case nodeproto.Setup:
			err := ns.setup(ctx, m.Setup)
			if err == nil {
				// The node takes the share of the CPUs it begins the
				// sale on before it is ready.
				ns.share = cpushare.New(ns.opts.CPUShare)
				ns.share.Prime(func() (float64, bool) { return health.OthersRunning(cpushare.Family()) })
			}
			reply := &nodeproto.Message{Kind: nodeproto.Ready}
			if err != nil {
				reply.Err = err.Error()
			}
			ns.l.Send(reply)
		case nodeproto.Go:
			if ns.r == nil {
				return errors.New("workload: node protocol: go before setup")
			}
			ns.r.started, ns.r.base = time.Now(), m.T0
			// The sale's deadline, as the coordinator's: a lock that waits
			// until its context's deadline (redislock) waits as long here.
			if t := ns.r.cfg.Timeout; t > 0 {
				var cancel context.CancelFunc
				sale, cancel = context.WithTimeout(sale, time.Duration(m.T0+int64(t)-monoclock.Now()))
				defer cancel()
			}
			// A node its coordinator started on this machine counts the
			// coordinator and its fellow nodes as the run's processes.
			var own func() []int
			if ns.share != nil {
				own = cpushare.Family
			}
			ns.mon = health.Start(ns.r.now, own, ns.share.Observe)
			ns.r.startWorkers(sale, ns.n, ns.r.cfg.Clients/ns.r.cfg.Nodes+1, &clients)
			ns.r.goSafe(func() { ns.report(stats) })
			if !ns.acked {
				// Without faults the node keeps its buyers' schedule, as
				// an in-process sale does (its coordinator sends none).
				arriving.Add(1)
				ns.r.goGroup(&arriving, func() {
					ns.r.arrive(sale, ns.n.id, ns.r.cfg.Nodes, 0, func(c int32, late time.Duration) {
						ns.mon.Lag(late)
						ns.hand(sale, c, &clients)
					})
				})
			}
		case nodeproto.Buyer:
			if ns.r == nil || !ns.acked {
				return errors.New("workload: node protocol: a buyer handed to a node that keeps its buyers' schedule")
			}
			ns.r.arrived.Add(1)
			ns.hand(sale, m.Client, &clients)
		case nodeproto.ProbeReply, nodeproto.Ack:
			ns.l.Answer(m)
		case nodeproto.Pause:
			ns.n.pause.begin(100 * 365 * 24 * time.Hour) // until the coordinator ends it
			ns.l.Send(&nodeproto.Message{Kind: nodeproto.Ack, ID: m.ID})
		case nodeproto.Through:
			ns.n.pause.letThrough(m.Client)
		case nodeproto.Resume:
			ns.n.pause.end()
		case nodeproto.Skew:
			ns.n.skew.Store(m.T0)
		case nodeproto.Stop:
			if ns.r == nil {
				return nil
			}
			endSale(errStopped)
			ns.n.pause.end()
			arriving.Wait()
			if ns.n.queue != nil {
				close(ns.n.queue)
				ns.n.queue = nil
			}
			clients.Wait()
			stopStats()
			stopped = true
			end := &nodeproto.Message{Kind: nodeproto.End, Commands: ns.n.commands.Load(), Unread: ns.r.unread.Load()}
			if ns.mon != nil {
				h := ns.mon.Stop(ns.n.id)
				end.Health = &h
			}
			ns.share.End()
			ns.l.Send(end)
		case nodeproto.Die:
			// A crash on another machine: the process dies at once, as a
			// SIGKILL from outside would kill it.
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}

// hand gives buyer c, arrived, to the node's workers.
func (ns *nodeSide) hand(ctx context.Context, c int32, clients *sync.WaitGroup) {
	ns.r.initSlots(c, ns.n.id)
	ns.current[ns.r.slot(c)].Store(0)
	ns.r.serve(ctx, ns.n, c, clients)
}

// maxPanicText bounds the text of a panic a node reports, and that its
// coordinator keeps of one: the panic and enough of its stack to find it.
const maxPanicText = 16 << 10

// panicked tells the coordinator that a goroutine of the node panicked
// (err, a safego.Panic): the coordinator ends the run as an internal
// error, naming it, and stops the node.
func (ns *nodeSide) panicked(err error) {
	ns.l.Send(&nodeproto.Message{Kind: nodeproto.Panicked, Err: bounded(err.Error(), maxPanicText)})
}

// bounded is s cut to at most n bytes.
func bounded(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// errStopped is the cause of a node's sale that its coordinator ended.
var errStopped = errors.New("workload: the sale ended")

// report sends the node's counters four times a second until stop.
func (ns *nodeSide) report(stop <-chan struct{}) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ns.l.Post(&nodeproto.Message{Kind: nodeproto.Stats, Commands: ns.n.commands.Load(), Unread: ns.r.unread.Load()})
		}
	}
}

// setup builds the node's run from what the coordinator sent and starts
// its node.
func (ns *nodeSide) setup(ctx context.Context, s *nodeproto.Assignment) error {
	if ns.opts.Sale == nil {
		return errors.New("workload: the node has no way to find a sale")
	}
	sale, err := ns.opts.Sale(s.Impl)
	if err != nil {
		return err
	}
	set := &servers.Set{}
	if s.Redis != nil {
		set.Redis = nodeRedis(*s.Redis)
	}
	for kind, spec := range s.Servers {
		info, ok := servers.Lookup(servers.Kind(kind))
		if !ok || info.Node == nil {
			return fmt.Errorf("workload: the coordinator sent a server of kind %q, which this node does not know", kind)
		}
		srv, err := info.Node(spec)
		if err != nil {
			return err
		}
		set.Put(servers.Kind(kind), srv)
	}
	w, err := decodeWorkload(s.Workload)
	if err != nil {
		return err
	}
	// What the coordinator sends is checked as a flag would be: a bound
	// out of range (a pipeline's queue, the items) is refused, not made.
	if err := Supports(sale, w); err != nil {
		return err
	}
	cfg := Config{Name: s.Impl, Sale: sale, Servers: set, Workload: w}
	cfg.Nodes = s.Nodes
	if s.Probes {
		cfg.Injector = probeRelay{ns}
	}
	ns.acked = s.Probes
	r := &run{cfg: cfg, keys: newKeys(cfg.Prefix+cfg.Name+":", cfg.Items), cart: max(1, cfg.Cart), arrivals: cfg.Arrivals(), stride: s.Nodes, shift: int64(ns.opts.ClockShift), link: ns}
	r.controls = &Controls{r: r}
	local := s.Clients/s.Nodes + 1
	r.allocSlots(local)
	ns.current = make([]atomic.Int32, local)
	n, err := r.startNode(ctx, s.Node, s.UUID)
	if n != nil {
		r.nodes = []*node{n}
	}
	ns.r, ns.n = r, n
	return err
}

// encodeWorkload is w as a setup carries it to a node.
func encodeWorkload(w Workload) []byte {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(w); err != nil {
		panic(err) // a Workload is numbers, strings and booleans: it always encodes
	}
	return b.Bytes()
}

// decodeWorkload is the Workload a setup carries.
func decodeWorkload(b []byte) (Workload, error) {
	var w Workload
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return Workload{}, fmt.Errorf("%w: the setup's workload: %v", nodeproto.ErrMalformed, err)
	}
	return w, nil
}

// started tells the coordinator that buyer c begins attempt a at t. Under
// faults it waits for its word: a buyer the coordinator does not know to
// have begun is one it may hand to the node's next incarnation after a
// kill, so nothing of an attempt may happen before the coordinator knows
// of it. Without faults nothing kills the node, and the start goes ahead
// of the attempt unanswered (the coordinator treats every buyer of a node
// lost on its own as begun: see remoteNode.gone), posted (Post) with the
// node's other reports.
func (ns *nodeSide) started(ctx context.Context, c int32, a int16, t int64) error {
	ns.current[ns.r.slot(c)].Store(int32(a))
	m := &nodeproto.Message{Kind: nodeproto.Start, Client: c, Attempt: a, T0: t}
	if !ns.acked {
		if !ns.l.Post(m) {
			return nodeproto.ErrClosed
		}
		return nil
	}
	_, err := ns.l.Call(ctx, m)
	return err
}

// done sends buyer c's records, whole, once it was answered: its slots up
// to the last one written (the coordinator's slots past it are as empty).
// Without faults it is posted (Post) with the node's other reports: what
// a buyer's report waits for is the end of the sale. Under faults it goes
// at once, so that a kill of the node a moment later does not take the
// records of a buyer that was done with it.
func (ns *nodeSide) done(c int32, ops []history.Op) {
	for len(ops) > 0 && untouched(&ops[len(ops)-1]) {
		ops = ops[:len(ops)-1]
	}
	m := &nodeproto.Message{Kind: nodeproto.Done, Client: c, Ops: append([]history.Op(nil), ops...)}
	if ns.acked {
		ns.l.Send(m)
		return
	}
	ns.l.Post(m)
}

// probeRelay is a node process's injector: each probe point goes to the
// coordinator, whose faults decide, with the attempt's records so far.
type probeRelay struct{ ns *nodeSide }

// Probe implements Injector.
func (p probeRelay) Probe(ctx context.Context, _ *Controls, at Site) error {
	ns := p.ns
	m := &nodeproto.Message{Kind: nodeproto.Probe, Client: at.Client, Point: string(at.Point)}
	if at.Client >= 0 {
		a := int16(ns.current[ns.r.slot(at.Client)].Load())
		i := int(a) * ns.r.cart
		m.Attempt, m.Ops = a, append([]history.Op(nil), ns.r.slots(at.Client)[i:i+ns.r.cart]...)
	}
	reply, err := ns.l.Call(ctx, m)
	if err != nil {
		return err
	}
	switch reply.Err {
	case "":
		return nil
	case errCrashedText:
		return ErrCrashed
	}
	return errors.New(reply.Err)
}

// Run implements Injector: a node's faults are scheduled by its
// coordinator.
func (probeRelay) Run(context.Context, *Controls) {}

// nodeRedis is a Redis as a node process knows it: an address.
type nodeRedis nodeproto.Redis

func (s nodeRedis) Name() string    { return "redis at " + s.Addr }
func (s nodeRedis) Version() string { return "" }
func (s nodeRedis) Close() error    { return nil }
func (s nodeRedis) Options() *redis.Options {
	o := servers.ClientOptions(s.Addr, s.Password)
	o.Username, o.DB = s.Username, s.DB
	return o
}
