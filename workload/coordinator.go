package workload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/health"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/monoclock"
	"github.com/lockbench/lockbench/internal/safego"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/nodeproto"
)

// ErrNodesUnsupported means a sale cannot run on nodes in processes of
// their own (see SupportsNodes).
var ErrNodesUnsupported = errors.New("workload: not supported on nodes in processes")

// errNodeLost is the cause of a sale cut short because a node's process
// ended without a fault killing it.
var errNodeLost = fmt.Errorf("%w: a node's process ended", servers.ErrUnreachable)

// ErrNodeMisbehaved is the cause of a sale cut short because a node broke
// the node protocol: a message that does not fit the plan (a buyer not
// its own, an attempt out of range, an instant that cannot be), or no end
// of the sale when told to stop. The node is dropped and named; what was
// recorded stands. It wraps servers.ErrUnreachable (an infrastructure
// failure, not the lock's).
var ErrNodeMisbehaved = fmt.Errorf("%w: a node broke the node protocol", servers.ErrUnreachable)

// lostNode reports whether err is the loss of a node (errNodeLost or
// ErrNodeMisbehaved).
func lostNode(err error) bool {
	return errors.Is(err, errNodeLost) || errors.Is(err, ErrNodeMisbehaved)
}

// helloTimeout bounds how long a launched node may take to dial in, and
// then to be ready.
const helloTimeout = 30 * time.Second

// stopGrace bounds, with twice the command timeout, how long the nodes
// may take to end the sale once told to stop: one deadline for all.
const stopGrace = 10 * time.Second

// killWait bounds how long a node on another machine may take to die
// once told to.
const killWait = 5 * time.Second

// instantSlack is how far past the coordinator's own clock (and its
// measured error) an instant a node reports may be: drift between two
// measurements of its offset. A stall of this process only makes the
// bound looser.
const instantSlack = int64(time.Second)

// maxRefusals is how many refused connections a coordinator remembers,
// to name them when a node does not dial in.
const maxRefusals = 8

// SupportsNodes refuses a sale that nodes in processes (a Launcher of
// the mode named) cannot run: such nodes are given addresses, so a sale
// on several Redis servers (whose cut lever lives in the run's process),
// on a Sentinel topology (whose clients find the primary through it) or
// on a service under test (whose instances are processes already) runs
// on in-process nodes. set may be nil. The error wraps
// ErrNodesUnsupported.
func SupportsNodes(mode, name string, sale Sale, set *servers.Set) error {
	needs := sale.Needs()
	switch {
	case needs.Has(servers.KindTarget):
		return fmt.Errorf("%w: nodes in processes (--node-mode=%s) drive lockbench's own sales; a service under test runs in its own instances already", ErrNodesUnsupported, mode)
	case needs.Has(servers.KindRedisServers):
		return fmt.Errorf("%w: %s runs on several Redis servers, which nodes in processes (--node-mode=%s) do not reach yet: use --node-mode=inproc", ErrNodesUnsupported, name, mode)
	case needs.Has(servers.KindRedisReplica):
		return fmt.Errorf("%w: %s runs on a Sentinel topology, which nodes in processes (--node-mode=%s) do not reach yet: use --node-mode=inproc", ErrNodesUnsupported, name, mode)
	}
	if _, ok := set.Get(servers.KindRedis).(servers.Failover); ok && needs.Has(servers.KindRedis) {
		return NodesOnFailover(mode)
	}
	for k, srv := range set.Others() {
		if !needs.Has(k) {
			continue
		}
		info, known := servers.Lookup(k)
		_, addressed := srv.(servers.Addressed)
		_, portable := srv.(servers.Portable)
		if !known || info.Node == nil || !addressed && !portable {
			return fmt.Errorf("%w: %s is not carried to nodes in processes (--node-mode=%s): use --node-mode=inproc", ErrNodesUnsupported, srv.Name(), mode)
		}
	}
	return nil
}

// NodesOnFailover is the refusal of nodes in processes (a Launcher of the
// mode named) on a Redis reached through Sentinel: the failover client's
// way to the primary is not carried to them. It wraps ErrNodesUnsupported.
func NodesOnFailover(mode string) error {
	return fmt.Errorf("%w: the Sentinel topology's clients are not carried to nodes in processes (--node-mode=%s) yet: use --node-mode=inproc with Sentinel", ErrNodesUnsupported, mode)
}

// coordinator runs a sale's nodes as processes: it launches them, starts
// the sale on each (which hands its own buyers to itself at their
// scheduled arrivals, or, under faults, is handed each by the
// coordinator), answers their probes with the run's faults, pulls the
// faults' levers on them, and merges what they record into the run's
// history.
type coordinator struct {
	r     *run
	ctx   context.Context // the run's: launches and restarts end with it
	ln    net.Listener
	addr  string
	nodes []*remoteNode
	// secret is the run's node secret, tls the listener's configuration
	// (a certificate pinned by the secret).
	secret string
	tls    *tls.Config
	// lose cuts the sale short (a node lost).
	lose context.CancelCauseFunc
	// sending bounds every link's wait on a node that does not read
	// (nodeproto.Link.Bound): it ends with the sale (cutBy), so that a
	// node whose queue stays full past the run's deadline is dropped,
	// never a hang of the coordinator.
	sending    context.Context
	endSending context.CancelFunc

	mu sync.Mutex
	// hellos are the launched nodes waiting to dial in, by token.
	hellos map[string]chan *nodeproto.Link
	// outstanding counts the buyers arrived (delivered, or expected of
	// nodes that keep the schedule) and not yet answered, for a moment
	// below zero when a node answers a buyer the coordinator has yet to
	// count; delivering is true until every arrival was counted; all is
	// closed once both are done.
	outstanding int
	delivering  bool
	all         chan struct{}
	finishing   bool
	lost        error
	closed      bool
	// refused are the connections refused (no proof of the secret, a
	// second one for a node), for the error of a node that never came.
	refused []string
}

// remoteNode is one node as its coordinator sees it: the process of its
// current incarnation (a node killed by a fault is started again), its
// link, and its buyers in flight.
type remoteNode struct {
	co *coordinator
	n  *node // the run's record of the node: its pause, skew, counters

	mu   sync.Mutex
	proc Process
	link *nodeproto.Link
	// readEnd is closed once the incarnation's link was read to its end
	// and what went with it recorded (gone).
	readEnd <-chan struct{}
	// live is true while the node's incarnation runs the sale; joined
	// once any incarnation was sent the sale's start (join).
	live, joined bool
	// killed is true once a fault killed the incarnation.
	killed  bool
	crashAt int64
	// toldEnd is when the node was sent the sale's end (a Stop), 0
	// before.
	toldEnd int64
	// inflight are the buyers delivered and not answered (without
	// faults, those begun and not answered): their context on this side
	// (a probe's, which a kill cancels; none without faults) and the
	// attempt they began (-1 before the first: the node's next
	// incarnation serves them, if this one dies first).
	inflight map[int32]*inflight
	// unstarted counts the buyers of inflight that have not begun, as far
	// as the node's starts have come in (see deliver).
	unstarted int
	// finished is true, at the index of each of the node's buyers (its
	// number divided by the nodes'), once it was answered or crashed: the
	// node may report nothing more of it.
	finished []bool
	// offset is the node's clock minus the coordinator's, eps the bound
	// of its error, both measured by round trips.
	offset, eps int64
	ended       chan struct{}
	// health is what the node measured of itself, from its end.
	health *history.Health
	// stops are the spans in which the coordinator held the node's
	// process stopped (a fault's pause), on the run's clock, taken out of
	// its health (history.Health.Discount); stoppedAt is when the stop
	// on began, -1 when none is.
	stops     []history.Span
	stoppedAt int64
	// broke is why the node was dropped for breaking the protocol.
	broke error
}

// newRemoteNode is the coordinator's side of node n, before any
// incarnation.
func newRemoteNode(co *coordinator, n *node) *remoteNode {
	return &remoteNode{co: co, n: n, inflight: map[int32]*inflight{}, finished: make([]bool, co.r.cfg.Clients/co.r.cfg.Nodes+1), stoppedAt: -1}
}

type inflight struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	attempt int16
	start   int64
	// parked is true while a probe of the buyer's waits for its answer:
	// the buyer stands still at it, and its records, as that probe
	// reported them, are current.
	parked bool
	// answered is when the buyer's last probe was answered: from then on
	// it went on, and what it did is known only from its next report.
	answered int64
}

func newCoordinator(r *run) *coordinator {
	co := &coordinator{r: r, hellos: map[string]chan *nodeproto.Link{}, delivering: true, all: make(chan struct{})}
	co.sending, co.endSending = context.WithCancel(context.Background())
	return co
}

// launch listens, starts every node and waits until each is ready.
func (co *coordinator) launch(ctx context.Context) error {
	co.ctx = context.WithoutCancel(ctx)
	co.secret = co.r.cfg.NodeSecret
	if co.secret == "" {
		if co.remote() {
			return fmt.Errorf("workload: nodes others start (%s) are given the run's secret by their starter, so the coordinator needs it given too (Config.NodeSecret): %w", co.r.cfg.Launcher.Mode(), nodeproto.ErrSecret)
		}
		co.secret = nodeproto.NewSecret()
	}
	var err error
	if co.tls, err = nodeproto.ServerTLS(co.secret); err != nil {
		return err
	}
	listen := co.r.cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("workload: the coordinator cannot listen on %s: %w", listen, err)
	}
	co.ln, co.addr = ln, ln.Addr().String()
	co.nodes = make([]*remoteNode, co.r.cfg.Nodes)
	for i := range co.nodes {
		n := &node{id: i}
		rn := newRemoteNode(co, n)
		n.pause.remote = rn
		n.remote = rn
		co.nodes[i] = rn
		co.r.nodes = append(co.r.nodes, n)
	}
	// Every node is awaited before the first connection is taken: a
	// remote node may dial in as soon as the coordinator listens.
	hellos := make([]hello, len(co.nodes))
	for i := range co.nodes {
		hellos[i] = co.await(i)
	}
	co.r.goSafe(co.accept)
	// Launched together, waited for one by one: the nodes of a remote
	// launcher (pods) come up in any order.
	errs := make([]error, len(co.nodes))
	var wg sync.WaitGroup
	for i, rn := range co.nodes {
		wg.Add(1)
		co.r.goGroup(&wg, func() {
			errs[i] = rn.incarnate(ctx, hellos[i])
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// accept takes the nodes' connections and hands each that proves the
// run's secret to the launch that waits for its token (its index, for a
// remote node): one connection per launch, a second one refused.
func (co *coordinator) accept() {
	for {
		conn, err := co.ln.Accept()
		if err != nil {
			return
		}
		co.r.goSafe(func() {
			conn.SetDeadline(time.Now().Add(helloTimeout))
			l, m, err := nodeproto.Accept(co.ctx, conn, co.tls, co.secret)
			if err != nil {
				co.refuse(conn.RemoteAddr(), err)
				conn.Close()
				return
			}
			conn.SetDeadline(time.Time{})
			l.Bound(co.sending)
			key := co.helloKey(m.Node, m.Token)
			co.mu.Lock()
			ch := co.hellos[key]
			delete(co.hellos, key)
			co.mu.Unlock()
			if ch == nil {
				co.refuse(conn.RemoteAddr(), fmt.Errorf("node %d: no such node is awaited (a second connection for one node, or an index outside 0-%d)", m.Node, len(co.nodes)-1))
				l.Close()
				return
			}
			ch <- l
		})
	}
}

// refuse remembers a connection refused, for the error of a node that
// never came.
func (co *coordinator) refuse(from net.Addr, err error) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if len(co.refused) < maxRefusals {
		co.refused = append(co.refused, fmt.Sprintf("%s: %v", from, err))
	}
}

// refusals names the connections refused, for an error; "" when none
// was.
func (co *coordinator) refusals() string {
	co.mu.Lock()
	defer co.mu.Unlock()
	if len(co.refused) == 0 {
		return ""
	}
	return "; connections refused: " + strings.Join(co.refused, "; ")
}

// remote reports whether the nodes run on other machines (Remote).
func (co *coordinator) remote() bool {
	_, ok := co.r.cfg.Launcher.(Remote)
	return ok
}

// helloKey is what a node's hello is matched by: the token of the
// launch that started it, or, for nodes others start (remote), its index.
func (co *coordinator) helloKey(node int, token string) string {
	if co.remote() {
		return fmt.Sprint(node)
	}
	return token
}

// hello is an incarnation of a node awaited: the token it is started
// with, the key its hello is matched by, and where its link comes.
type hello struct {
	token, key string
	ch         chan *nodeproto.Link
}

// await makes the coordinator await an incarnation of node i.
func (co *coordinator) await(i int) hello {
	token := newUUID()
	h := hello{token: token, key: co.helloKey(i, token), ch: make(chan *nodeproto.Link, 1)}
	co.mu.Lock()
	co.hellos[h.key] = h.ch
	co.mu.Unlock()
	return h
}

// incarnate starts the node's process (again, after a kill) awaited as
// h, waits for it to dial in, measures its clock, sets it up and waits
// until it is ready. In a sale under way it then joins it: go, and its
// buyers.
func (rn *remoteNode) incarnate(ctx context.Context, h hello) error {
	co, i := rn.co, rn.n.id
	token, key, ch := h.token, h.key, h.ch
	defer func() {
		co.mu.Lock()
		delete(co.hellos, key)
		co.mu.Unlock()
	}()
	proc, err := co.r.cfg.Launcher.Launch(ctx, i, co.addr, Credentials{Token: token, Secret: co.secret})
	if err != nil {
		return fmt.Errorf("%w: node %d: %v", servers.ErrUnreachable, i, err)
	}
	var l *nodeproto.Link
	t := time.NewTimer(helloTimeout)
	defer t.Stop()
	select {
	case l = <-ch:
	case <-proc.Exited():
		return fmt.Errorf("%w: node %d's process ended before it dialed in: %s%s", servers.ErrUnreachable, i, lastLines(proc.Output()), co.refusals())
	case <-t.C:
		proc.Close()
		return fmt.Errorf("%w: node %d did not dial in within %v (%s launcher, coordinator at %s)%s", servers.ErrUnreachable, i, helloTimeout, co.r.cfg.Launcher.Mode(), co.addr, co.refusals())
	case <-ctx.Done():
		proc.Close()
		return fmt.Errorf("%w (node %d had not dialed in%s)", context.Cause(ctx), i, co.refusals())
	}
	// From its hello to its ready, the node has helloTimeout too.
	ctx, cancel := context.WithTimeoutCause(ctx, helloTimeout, fmt.Errorf("%w: node %d did not get ready within %v of dialing in", servers.ErrUnreachable, i, helloTimeout))
	defer cancel()
	replies := make(chan *nodeproto.Message, 1)
	// The link is read on only once this incarnation is the node's, or
	// was given up: a node lost right after its ready is then lost as
	// the node's, not as an incarnation that never joined.
	settled := make(chan struct{})
	defer close(settled)
	readEnd := make(chan struct{})
	co.r.goSafe(func() {
		defer close(readEnd)
		rn.read(l, proc, replies, settled)
	})
	offset, eps, err := measureClock(ctx, l)
	if err != nil {
		proc.Close()
		if b := rn.broken(); b != nil {
			return b
		}
		return fmt.Errorf("%w: node %d: measuring its clock: %v", servers.ErrUnreachable, i, err)
	}
	setup, err := co.setup(i)
	if err != nil {
		proc.Close()
		return err
	}
	rn.n.uuid = setup.UUID
	l.Send(&nodeproto.Message{Kind: nodeproto.Setup, Setup: setup})
	select {
	case m := <-replies:
		if m.Err != "" {
			proc.Close()
			return fmt.Errorf("%w: node %d: %.500s", servers.ErrUnreachable, i, m.Err)
		}
	case <-proc.Exited():
		if b := rn.broken(); b != nil {
			return b
		}
		return fmt.Errorf("%w: node %d's process ended while it started: %s", servers.ErrUnreachable, i, lastLines(proc.Output()))
	case <-ctx.Done():
		proc.Close()
		return context.Cause(ctx)
	}
	rn.mu.Lock()
	rn.proc, rn.link, rn.offset, rn.eps, rn.readEnd = proc, l, offset, eps, readEnd
	rn.killed, rn.ended = false, make(chan struct{})
	running := co.r.base != 0
	if running {
		rn.join()
	}
	rn.mu.Unlock()
	return nil
}

// join sends the node the sale's start and its buyers waiting; rn.mu is
// held.
func (rn *remoteNode) join() {
	rn.live, rn.joined = true, true
	rn.link.Send(&nodeproto.Message{Kind: nodeproto.Go, T0: rn.co.r.base + rn.offset})
	if s := rn.n.skew.Load(); s != 0 {
		rn.link.Send(&nodeproto.Message{Kind: nodeproto.Skew, T0: s})
	}
	// The buyers delivered while no incarnation ran, and those its last
	// one had not begun, in the order they arrived.
	var waiting []int32
	for c, f := range rn.inflight {
		if f.attempt < 0 {
			waiting = append(waiting, c)
		}
	}
	slices.Sort(waiting)
	for _, c := range waiting {
		rn.link.Send(&nodeproto.Message{Kind: nodeproto.Buyer, Client: c})
	}
}

// setup is node i's part of the sale, with the addresses it dials.
func (co *coordinator) setup(i int) (*nodeproto.Assignment, error) {
	r := co.r
	s := &nodeproto.Assignment{Node: i, Nodes: r.cfg.Nodes, UUID: newUUID(), Impl: r.cfg.Name, Clients: r.cfg.Clients, Workload: encodeWorkload(r.cfg.Workload), Probes: co.acked()}
	rt, _ := r.cfg.Injector.(Router)
	route := func(addr string) (string, error) {
		if rt == nil {
			return addr, nil
		}
		return rt.Route(i, addr)
	}
	needs := r.cfg.Sale.Needs()
	if needs.Has(servers.KindRedis) {
		o := r.cfg.Servers.Redis.Options()
		addr, err := route(o.Addr)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %v", servers.ErrUnreachable, i, err)
		}
		s.Redis = &nodeproto.Redis{Addr: addr, Username: o.Username, Password: o.Password, DB: o.DB}
	}
	for k, srv := range r.cfg.Servers.Others() {
		if !needs.Has(k) {
			continue
		}
		spec, err := nodeSpec(srv, route)
		if err != nil {
			return nil, fmt.Errorf("node %d: %s: %w", i, k, err)
		}
		if s.Servers == nil {
			s.Servers = map[string]string{}
		}
		s.Servers[string(k)] = spec
	}
	return s, nil
}

// nodeSpec is how a node in a process of its own reaches srv: its
// addresses routed through the node's fault proxy (Addressed), in its
// whole spec when it has one (Routable), or its spec (Portable).
func nodeSpec(srv servers.Server, route func(string) (string, error)) (string, error) {
	if a, ok := srv.(servers.Addressed); ok {
		addrs := a.Addrs()
		routed := make([]string, len(addrs))
		for j, addr := range addrs {
			var err error
			if routed[j], err = route(addr); err != nil {
				return "", fmt.Errorf("%w: %v", servers.ErrUnreachable, err)
			}
		}
		return servers.SpecAt(a, routed)
	}
	if p, ok := srv.(servers.Portable); ok {
		return p.Spec(), nil
	}
	return "", fmt.Errorf("%w: %s cannot be reached from a node's process", ErrNodesUnsupported, srv.Name())
}

// measureClock measures the node's clock against this one's by round
// trips, as NTP does: the node's reading t1 was taken between the ping's
// sending t0 and the pong's arrival t2, so its offset is t1 − (t0+t2)/2,
// within (t2−t0)/2. The shortest of the round trips gives the bound.
func measureClock(ctx context.Context, l *nodeproto.Link) (offset, eps int64, err error) {
	eps = -1
	for range 16 {
		t0 := monoclock.Now()
		a, err := l.Call(ctx, &nodeproto.Message{Kind: nodeproto.Ping, T0: t0})
		if err != nil {
			return 0, 0, err
		}
		t2 := monoclock.Now()
		if e := (t2 - t0 + 1) / 2; eps < 0 || e < eps {
			eps, offset = e, a.T1-(t0+t2)/2
		}
	}
	return offset, eps, nil
}

// read handles the node's messages until its link ends; the first
// ready (or failed setup) goes to ready, and the link is read on once
// settled is closed (its incarnation taken on, or given up). A message
// that breaks the
// protocol (check) drops the node: its link is closed, and the sale is
// cut short naming it.
func (rn *remoteNode) read(l *nodeproto.Link, proc Process, ready chan<- *nodeproto.Message, settled <-chan struct{}) {
	co, r := rn.co, rn.co.r
	readied := false
	for {
		m, err := l.Recv()
		if err != nil {
			if errors.Is(l.Err(), nodeproto.ErrStalled) {
				rn.drop(l, errors.New("it stopped reading what it was sent: its queue stayed full past the sale's end"))
			}
			rn.gone(l, proc)
			return
		}
		if err := rn.check(m, readied); err != nil {
			rn.drop(l, err)
			continue // Recv fails now, and the node is gone
		}
		switch m.Kind {
		case nodeproto.Pong, nodeproto.Ack:
			l.Answer(m)
		case nodeproto.Panicked:
			r.crash(nodePanic{node: rn.n.id, text: bounded(m.Err, maxPanicText)})
		case nodeproto.Ready:
			readied = true
			ready <- m
			<-settled
		case nodeproto.Start:
			// Once the node is being killed no attempt may begin: without
			// the answer, the buyer never does, and its next incarnation
			// serves it.
			rn.mu.Lock()
			if rn.begin(m.Client, m.Attempt, m.T0) && co.acked() {
				l.Send(&nodeproto.Message{Kind: nodeproto.Ack, ID: m.ID})
			}
			rn.mu.Unlock()
		case nodeproto.Probe:
			// What a probe reports of a buyer the node does not serve
			// (any more) is not kept; the probe is answered all the same.
			rn.mu.Lock()
			if f := rn.inflight[m.Client]; f != nil && m.Client >= 0 {
				r.mergeAttempt(m.Client, m.Attempt, m.Ops)
				f.parked = true
			}
			rn.mu.Unlock()
			r.goSafe(func() { rn.probe(l, m) })
		case nodeproto.Done:
			copy(r.slots(m.Client), m.Ops)
			for i := range m.Ops {
				if m.Ops[i].Outcome == history.Sold {
					r.sold.Add(1)
				}
			}
			rn.answered(m.Client)
		case nodeproto.Stats, nodeproto.End:
			rn.n.commands.Store(m.Commands)
			if m.Unread {
				r.unread.Store(true)
			}
			if m.Kind == nodeproto.End {
				rn.mu.Lock()
				if m.Health != nil {
					rn.health = m.Health
					rn.health.Node, rn.health.Nodes = rn.n.id, nil
				}
				if rn.ended != nil {
					close(rn.ended)
					rn.ended = nil
				}
				rn.mu.Unlock()
			}
		}
	}
}

// nodePanic is a panic in a goroutine of a node's process, as the node
// reported it (nodeproto.Panicked): it ends the run as a panic of its own
// does, naming the node.
type nodePanic struct {
	node int
	text string
}

func (e nodePanic) Error() string { return fmt.Sprintf("node %d: %s", e.node, e.text) }
func (e nodePanic) Unwrap() error { return safego.ErrPanic }

// drop closes the link of a node that broke the protocol, and cuts the
// sale short naming it (the first such error is the run's).
func (rn *remoteNode) drop(l *nodeproto.Link, why error) {
	err := fmt.Errorf("%w: node %d dropped: %v", ErrNodeMisbehaved, rn.n.id, why)
	rn.mu.Lock()
	if rn.broke == nil {
		rn.broke = err
	}
	rn.mu.Unlock()
	rn.co.fail(err)
	go l.Close()
}

// broken is why the node was dropped, nil if it was not.
func (rn *remoteNode) broken() error {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.broke
}

// check refuses a message of the node's that does not fit the plan,
// before anything of it is used: a kind a node does not send, a second
// ready, an end before the node was told the sale's end, a report of a
// buyer before the sale began on it, a probe point without faults, a
// buyer that is not the node's own or that it does not serve, a start
// before its buyer's arrival or after its records, an attempt out of
// range, records not of that buyer and node, an instant that cannot be
// (past the coordinator's clock and the node's measured error, or before
// the sale by as much), a count below zero.
func (rn *remoteNode) check(m *nodeproto.Message, readied bool) error {
	r := rn.co.r
	switch m.Kind {
	case nodeproto.Pong, nodeproto.Ack, nodeproto.Panicked:
		return nil
	case nodeproto.Ready:
		if readied {
			return errors.New("a second ready")
		}
		return nil
	case nodeproto.Stats, nodeproto.End:
		if m.Commands < 0 {
			return fmt.Errorf("%v with %d commands", m.Kind, m.Commands)
		}
		if m.Kind == nodeproto.End {
			rn.mu.Lock()
			told := rn.toldEnd > 0
			rn.mu.Unlock()
			if !told {
				// Its end says it sent every report: not before it is
				// told the sale's end, when it may still begin buyers.
				return errors.New("an end before it was told the sale's end")
			}
		}
		return nil
	case nodeproto.Start, nodeproto.Probe, nodeproto.Done:
	default:
		return fmt.Errorf("a %v, which a node never sends", m.Kind)
	}
	// What a node reports of its buyers comes once the sale began on it.
	rn.mu.Lock()
	joined := rn.joined
	rn.mu.Unlock()
	if !joined {
		return fmt.Errorf("a %v before the sale", m.Kind)
	}
	switch m.Kind {
	case nodeproto.Start:
		if err := rn.owns(m.Client); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		if m.Attempt < 0 || int(m.Attempt) >= r.cfg.Attempts {
			return fmt.Errorf("start of buyer %d: attempt %d, not one of 0-%d", m.Client, m.Attempt, r.cfg.Attempts-1)
		}
		if err := rn.instant("start", m.Client, m.T0); err != nil {
			return err
		}
		if !rn.co.scheduled() {
			return nil
		}
		rn.mu.Lock()
		finished, limit := rn.finished[rn.index(m.Client)], rn.slack()
		rn.mu.Unlock()
		if finished {
			return fmt.Errorf("start of buyer %d, which it had answered", m.Client)
		}
		if a := r.arrival(int(m.Client)); m.T0 < a-limit {
			return fmt.Errorf("start of buyer %d at %d ns, before its arrival at %d ns (within %d ns)", m.Client, m.T0, a, limit)
		}
		return nil
	case nodeproto.Probe:
		if !rn.co.acked() {
			return errors.New("a probe, with no fault injected")
		}
		if m.Client == -1 && len(m.Ops) == 0 {
			return nil // a probe point of no buyer's
		}
		if err := rn.owns(m.Client); err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		if m.Attempt < 0 || int(m.Attempt) >= r.cfg.Attempts {
			return fmt.Errorf("probe of buyer %d: attempt %d, not one of 0-%d", m.Client, m.Attempt, r.cfg.Attempts-1)
		}
		if len(m.Ops) > r.cart {
			return fmt.Errorf("probe of buyer %d: %d records, more than its cart's %d", m.Client, len(m.Ops), r.cart)
		}
		return rn.ops("probe", m.Client, m.Ops)
	case nodeproto.Done:
		if err := rn.owns(m.Client); err != nil {
			return fmt.Errorf("done: %w", err)
		}
		rn.mu.Lock()
		serving := rn.serves(m.Client)
		rn.mu.Unlock()
		if !serving {
			return fmt.Errorf("done of buyer %d, which it was not serving", m.Client)
		}
		if n := len(r.slots(m.Client)); len(m.Ops) > n {
			return fmt.Errorf("done of buyer %d: %d records, more than its %d", m.Client, len(m.Ops), n)
		}
		return rn.ops("done", m.Client, m.Ops)
	}
	return nil
}

// untouched reports whether op is a record slot nothing was written to:
// an item of a cart (Workload.Cart) that the attempt has not reached,
// sent with the rest of the attempt's slots.
func untouched(op *history.Op) bool {
	return op.Client == 0 && op.Attempt == 0 && op.Node == 0 && op.Item == 0 && op.Arrival == 0 && op.Start == 0 &&
		op.AcquireCall == 0 && op.Acquired == 0 && op.ReadCall == 0 && op.ReadReturn == 0 && op.WriteCall == 0 &&
		op.WriteReturn == 0 && op.ReleaseCall == 0 && op.Released == 0 && op.End == 0 && op.Crash == 0 &&
		op.Token == 0 && op.Outcome == 0 && op.Write == 0 && len(op.Renewals) == 0
}

// index is where the node keeps buyer c, one of its own, in finished.
func (rn *remoteNode) index(c int32) int { return int(c) / rn.co.r.cfg.Nodes }

// owns refuses a buyer that is not one of the node's.
func (rn *remoteNode) owns(c int32) error {
	r := rn.co.r
	if c < 0 || int(c) >= r.cfg.Clients || int(c)%r.cfg.Nodes != rn.n.id {
		return fmt.Errorf("buyer %d is not one of node %d's (%d buyers on %d nodes)", c, rn.n.id, r.cfg.Clients, r.cfg.Nodes)
	}
	return nil
}

// ops refuses records that are not buyer c's on this node, or hold what
// cannot be.
func (rn *remoteNode) ops(what string, c int32, ops []history.Op) error {
	r := rn.co.r
	for i := range ops {
		op := &ops[i]
		if op.Client != c && untouched(op) {
			continue // a slot of the cart the attempt has not reached yet
		}
		switch {
		case op.Client != c:
			return fmt.Errorf("%s of buyer %d: a record of buyer %d", what, c, op.Client)
		case int(op.Node) != rn.n.id:
			return fmt.Errorf("%s of buyer %d: a record of node %d", what, c, op.Node)
		case op.Attempt < 0 || int(op.Attempt) >= r.cfg.Attempts:
			return fmt.Errorf("%s of buyer %d: a record of attempt %d, not one of 0-%d", what, c, op.Attempt, r.cfg.Attempts-1)
		case op.Item < 0 || int(op.Item) >= max(1, r.cfg.Items):
			return fmt.Errorf("%s of buyer %d: a record of item %d, not one of 0-%d", what, c, op.Item, max(1, r.cfg.Items)-1)
		case op.Outcome > history.CartRefused || op.Write > history.Indeterminate:
			return fmt.Errorf("%s of buyer %d: a record with outcome %d, write %d", what, c, op.Outcome, op.Write)
		}
		for _, t := range [...]int64{op.Arrival, op.Start, op.AcquireCall, op.Acquired, op.ReadCall, op.ReadReturn, op.WriteCall, op.WriteReturn, op.ReleaseCall, op.Released, op.End, op.Crash} {
			if err := rn.instant(what, c, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// instant refuses an instant t of buyer c's the node cannot have read:
// later than the coordinator's clock now (mapped by the node's offset,
// within its measured error and instantSlack), or as much before the
// sale. Zero is an instant not reached.
func (rn *remoteNode) instant(what string, c int32, t int64) error {
	rn.mu.Lock()
	limit := rn.slack()
	rn.mu.Unlock()
	if now := rn.co.r.now(); t > now+limit || t < -limit {
		return fmt.Errorf("%s of buyer %d: instant %d ns, outside the sale (now %d ns, within %d ns)", what, c, t, now, limit)
	}
	return nil
}

// begin records that buyer c began attempt at t0, as its node's start
// says, and reports whether it did: not for a buyer the node does not
// serve, nor once the node is being killed. A node that keeps the
// schedule serves each of its buyers from its first start on (check
// refused one it had finished). rn.mu is held.
func (rn *remoteNode) begin(c int32, attempt int16, t0 int64) bool {
	f := rn.inflight[c]
	if f == nil && rn.co.scheduled() && !rn.finished[rn.index(c)] {
		f = &inflight{attempt: attempt}
		rn.inflight[c] = f
	}
	if f == nil || rn.killed {
		return false
	}
	if f.attempt < 0 {
		rn.unstarted--
	}
	f.attempt, f.start = attempt, t0
	return true
}

// serves reports whether the node serves buyer c, one of its own: in
// flight, or, when it keeps the schedule, arrived (as far as its clock
// can be told) and not finished: a buyer whose sale ended before it
// began is answered without a start. rn.mu is held.
func (rn *remoteNode) serves(c int32) bool {
	if rn.inflight[c] != nil {
		return true
	}
	r := rn.co.r
	return rn.co.scheduled() && !rn.finished[rn.index(c)] && r.arrival(int(c)) <= r.now()+rn.slack()
}

// slack is how far an instant of the node's may lie past the
// coordinator's clock, or an arrival's: its clock's measured error and
// instantSlack. rn.mu is held.
func (rn *remoteNode) slack() int64 { return rn.eps + instantSlack }

// answered marks buyer c answered.
func (rn *remoteNode) answered(c int32) {
	rn.mu.Lock()
	served := rn.serves(c)
	f := rn.inflight[c]
	delete(rn.inflight, c)
	if f != nil && f.attempt < 0 {
		rn.unstarted--
	}
	rn.finished[rn.index(c)] = true
	rn.mu.Unlock()
	if !served {
		return
	}
	if f != nil && f.cancel != nil {
		f.cancel(nil)
	}
	rn.co.r.kill[rn.co.r.slot(c)].Store(nil)
	rn.co.r.finished.Add(1)
	rn.co.done(1)
}

// probe runs the run's faults at the probe point m reports, and answers.
func (rn *remoteNode) probe(l *nodeproto.Link, m *nodeproto.Message) {
	rn.mu.Lock()
	f := rn.inflight[m.Client]
	rn.mu.Unlock()
	reply := &nodeproto.Message{Kind: nodeproto.ProbeReply, ID: m.ID}
	if f == nil {
		reply.Err = "unknown buyer"
		l.Send(reply)
		return
	}
	err := rn.co.r.cfg.Injector.Probe(f.ctx, rn.co.r.controls, Site{Node: rn.n.id, Client: m.Client, Point: locks.Point(m.Point)})
	if err != nil {
		reply.Err = err.Error()
		if errors.Is(err, ErrCrashed) {
			reply.Err = errCrashedText
		}
	}
	if reply.Err != errCrashedText {
		rn.mu.Lock()
		f.parked, f.answered = false, rn.co.r.now()
		rn.mu.Unlock()
	}
	l.Send(reply)
}

// errCrashedText marks a probe's answer that says the buyer was killed.
const errCrashedText = "crashed"

// gone handles the end of an incarnation's link: its buyers in flight
// that had begun an attempt crashed there, the others wait for the next
// incarnation, which a kill starts; a node that ended on its own cuts
// the sale short, unless the sale is over.
func (rn *remoteNode) gone(l *nodeproto.Link, proc Process) {
	co, r := rn.co, rn.co.r
	l.Close()
	if !co.remote() { // a remote node's process is not this machine's to wait for
		waitExit(co.ctx, proc, 5*time.Second)
	}
	proc.Close()
	current, killed, crashed := rn.lost(l)
	if !current {
		return // an incarnation that never joined
	}
	r.finished.Add(int64(crashed))
	co.done(crashed)
	co.mu.Lock()
	finishing := co.finishing
	co.mu.Unlock()
	if finishing {
		return
	}
	if !killed {
		err := fmt.Errorf("%w: node %d: %s", errNodeLost, rn.n.id, lastLines(proc.Output()))
		co.fail(err)
		return
	}
	// A supervisor starts a crashed service again: so does the
	// coordinator, and the node's buyers yet to begin go to it.
	r.goSafe(func() {
		if err := rn.incarnate(co.ctx, co.await(rn.n.id)); err != nil {
			co.fail(fmt.Errorf("%w: node %d could not be started again after its crash: %v", errNodeLost, rn.n.id, err))
		}
	})
}

// lost ends the node's incarnation whose link was l, if it is the
// current one, and records as crashed its buyers in flight that had begun
// an attempt and, when it kept its buyers' schedule, those it had not
// reported that may have begun (see gone); it reports whether l was the
// current incarnation's, whether a fault killed it, and how many buyers
// crashed.
func (rn *remoteNode) lost(l *nodeproto.Link) (current, killed bool, crashed int) {
	co, r := rn.co, rn.co.r
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.link != l {
		return false, false, 0
	}
	// Nothing goes to the incarnation any more; one a kill ended is
	// replaced by the next (incarnate), one lost on its own is not
	// joined to a sale that has yet to begin (start).
	rn.link, rn.live = nil, false
	// A node that sent its end (which it does only once told the sale's
	// end) had sent every report before it.
	whole := rn.ended == nil
	if !whole {
		close(rn.ended)
		rn.ended = nil
	}
	killed = rn.killed
	at := rn.crashAt
	if !killed && rn.joined { // before the sale, nothing of it is recorded
		at = r.now()
	}
	for c, f := range rn.inflight {
		attempt, start := f.attempt, f.start
		if attempt < 0 {
			continue
		}
		crashed++
		known := at
		if killed && !f.parked && f.answered > 0 {
			// A buyer the kill found between two probes (not the one a
			// fault crashed, which stood at its probe) went on after its
			// last answer: it may have released since (its report of
			// that was lost with the node), so it is known to hold only
			// until that answer.
			known = max(f.answered, start)
		}
		r.crashAttempt(c, attempt, start, known)
		if f.cancel != nil {
			f.cancel(ErrCrashed)
		}
		delete(rn.inflight, c)
		rn.finished[rn.index(c)] = true
	}
	if co.scheduled() && rn.joined && !whole {
		// The node kept its buyers' schedule: one it had not reported
		// begun may have begun all the same, its start lost with the
		// node, at the earliest at its arrival. It handed out none after
		// it was told the sale's end. Each due by then, as far as the
		// node's clock can be told (the slack its starts are checked
		// with), is recorded crashed.
		until := at
		if rn.toldEnd > 0 {
			until = min(until, rn.toldEnd)
		}
		until += rn.slack()
		for i := rn.n.id; i < r.cfg.Clients; i += r.cfg.Nodes {
			c := int32(i)
			if rn.finished[rn.index(c)] || r.arrival(i) > until {
				continue
			}
			crashed++
			r.crashAttempt(c, 0, r.arrival(i), at)
			rn.finished[rn.index(c)] = true
		}
	}
	return true, killed, crashed
}

// fail cuts the sale short for err, the first loss of a node.
func (co *coordinator) fail(err error) {
	co.mu.Lock()
	if co.lost == nil {
		co.lost = err
	}
	lose := co.lose
	co.mu.Unlock()
	if lose != nil {
		lose(err)
	}
}

// cutBy gives the coordinator the sale's context and the function that
// cuts it short, at once if a node was lost before it began: once the sale
// ends (its deadline, a cut, Ctrl-C), a node that has stopped reading what
// it is sent is dropped at the next message that finds its queue full.
func (co *coordinator) cutBy(sale context.Context, lose context.CancelCauseFunc) {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.lose = lose
	context.AfterFunc(sale, co.endSending)
	if co.lost != nil {
		lose(co.lost)
	}
}

// kill kills the node that serves client k, as a crash of its process:
// every buyer it had in flight crashed. It reports whether the node ran.
func (co *coordinator) kill(k int32) bool {
	rn := co.nodes[int(k)%len(co.nodes)]
	rn.mu.Lock()
	if !rn.live || rn.killed {
		rn.mu.Unlock()
		return false
	}
	rn.killed, rn.live = true, false
	proc, l := rn.proc, rn.link
	rn.mu.Unlock()
	if err := proc.Kill(); errors.Is(err, servers.ErrUnsupported) {
		// A node on another machine kills itself; its link ends when it
		// is gone. One that does not within killWait is cut off.
		l.Send(&nodeproto.Message{Kind: nodeproto.Die})
		t := time.NewTimer(killWait)
		select {
		case <-l.Done():
		case <-t.C:
			l.Close()
		}
		t.Stop()
	}
	rn.stopEnded()
	at := co.r.now()
	rn.mu.Lock()
	rn.crashAt = at
	for c, f := range rn.inflight {
		if f.attempt >= 0 {
			co.r.crashAt[co.r.slot(c)].CompareAndSwap(0, at)
			f.cancel(ErrCrashed)
		}
	}
	rn.mu.Unlock()
	return true
}

// acked reports whether a node's starts wait for the coordinator's ack
// (nodeproto.Assignment.Probes): when faults are injected, which may kill
// a node; without, nothing kills one, and a node sends its starts ahead
// of its attempts.
func (co *coordinator) acked() bool { return co.r.cfg.Injector != nil }

// scheduled reports whether the nodes hand their buyers to themselves at
// their scheduled arrivals (nodeproto.Assignment.Probes false), as an
// in-process sale does, instead of being handed each by the coordinator:
// when no fault is injected. Then no kill starts a node again, so no
// incarnation has to be told which of its buyers have not begun, and
// nothing needs the coordinator to know of a buyer before its start. The
// coordinator learns of each from its start, and a start before the
// buyer's arrival, or of a buyer the node had answered, breaks the
// protocol.
func (co *coordinator) scheduled() bool { return !co.acked() }

// arrived counts one more buyer arrived, delivered or handed out by its
// node itself (scheduled): the sale is over once it is answered too. A
// node that keeps the schedule may report one before it is counted.
func (co *coordinator) arrived() {
	co.mu.Lock()
	co.outstanding++
	co.mu.Unlock()
}

// start sends every node the sale's start: the run's base on its clock.
func (co *coordinator) start() {
	for _, rn := range co.nodes {
		rn.mu.Lock()
		if rn.link != nil && !rn.killed {
			rn.join()
		}
		rn.mu.Unlock()
	}
}

// deliver hands buyer c to its node at its arrival.
func (co *coordinator) deliver(ctx context.Context, c int32) {
	rn := co.nodes[int(c)%len(co.nodes)]
	cctx, cancel := context.WithCancelCause(context.WithValue(ctx, clientKey{}, c))
	co.r.kill[co.r.slot(c)].Store(&cancel)
	co.arrived()
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.inflight[c] = &inflight{ctx: cctx, cancel: cancel, attempt: -1}
	rn.unstarted++
	if !rn.live {
		return
	}
	m := &nodeproto.Message{Kind: nodeproto.Buyer, Client: c}
	if rn.backlogged() {
		// More buyers wait at the node for a worker than it could begin
		// in the meantime: this one cannot begin before they do, so it
		// may wait in the link for the buyers after it
		// (nodeproto.Linger) and go in one write with them. A buyer a
		// worker may take at once goes at once.
		rn.link.Post(m)
		return
	}
	rn.link.Send(m)
}

// backlogged reports whether more of the node's buyers wait for a worker,
// as far as its starts have come in, than it could begin within a Linger
// and the starts' way back: two pools' worth, and at least minBacklog. A
// buyer handed to it then cannot begin before they do. Never without
// workers (each buyer has a goroutine of its own). rn.mu is held.
func (rn *remoteNode) backlogged() bool {
	w := rn.co.r.cfg.Workers
	return w > 0 && rn.unstarted > max(2*w, minBacklog)
}

// minBacklog is the fewest buyers waiting at a node behind which a buyer
// may wait in the link: beginning them within the 1 ms of a Linger and
// the few of the starts' way back would take hundreds of thousands of
// starts a second from one node, more than one Redis server answers.
const minBacklog = 256

// done counts k buyers answered.
func (co *coordinator) done(k int) {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.outstanding -= k
	co.check()
}

// check closes all once every buyer arrived and was answered; co.mu is
// held.
func (co *coordinator) check() {
	if !co.delivering && co.outstanding <= 0 && co.all != nil {
		close(co.all)
		co.all = nil
	}
}

// wait returns once every buyer that arrived was answered, or ctx ends.
func (co *coordinator) wait(ctx context.Context) {
	co.mu.Lock()
	co.delivering = false
	all := co.all
	co.check()
	co.mu.Unlock()
	if all == nil {
		return
	}
	select {
	case <-all:
	case <-ctx.Done():
	}
}

// finish ends the sale on every node (those still selling record their
// buyers as pending) and collects their last records, then stops them.
// It returns the loss of a node, if one cut the sale.
func (co *coordinator) finish() error {
	co.mu.Lock()
	co.finishing = true
	co.mu.Unlock()
	type end struct {
		node  int
		ended chan struct{}
	}
	var ends []end
	for _, rn := range co.nodes {
		rn.mu.Lock()
		if rn.link != nil && rn.ended != nil {
			ends = append(ends, end{rn.n.id, rn.ended})
			rn.toldEnd = co.r.now()
			rn.link.Send(&nodeproto.Message{Kind: nodeproto.Stop})
		}
		rn.mu.Unlock()
	}
	// One deadline for every node's end: a node that never answers costs
	// the run the grace once, not once per node, and is named.
	grace := stopGrace + 2*co.r.cfg.CommandTimeout
	bound, cancel := context.WithTimeout(co.ctx, grace)
	defer cancel()
	var late []string
	for _, e := range ends {
		select {
		case <-e.ended:
		case <-bound.Done():
			late = append(late, fmt.Sprint(e.node))
		}
	}
	if len(late) > 0 {
		co.mu.Lock()
		if co.lost == nil {
			co.lost = fmt.Errorf("%w: node %s did not end the sale within %v of its stop (dropped; its buyers that may have begun are recorded as crashed)", ErrNodeMisbehaved, strings.Join(late, ", "), grace)
		}
		co.mu.Unlock()
	}
	// The clocks are measured again once the nodes ended the sale: told
	// its end first, a node that keeps its buyers' schedule begins none
	// after it.
	co.remeasure()
	co.close()
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.lost
}

// close stops every node and the listener; it is safe to call again.
func (co *coordinator) close() {
	co.mu.Lock()
	if co.closed {
		co.mu.Unlock()
		return
	}
	co.closed, co.finishing = true, true
	co.mu.Unlock()
	co.endSending()
	if co.ln != nil {
		co.ln.Close()
	}
	var wg sync.WaitGroup
	for _, rn := range co.nodes {
		l, proc, _ := rn.current()
		rn.mu.Lock()
		readEnd := rn.readEnd
		rn.mu.Unlock()
		wg.Add(1)
		co.r.goGroup(&wg, func() {
			if l != nil {
				l.Close()
			}
			if proc != nil {
				proc.Continue()
				rn.stopEnded()
				proc.Close()
			}
			// What went with the link (a node that did not end the
			// sale: its buyers that may have begun, recorded crashed) is
			// in the history before it is made.
			if readEnd != nil {
				<-readEnd
			}
		})
	}
	wg.Wait()
}

// remeasure measures the clocks of remote nodes again at the sale's end:
// each node's bound grows by how far its offset moved meanwhile (drift),
// since its instants were mapped with the first offset.
func (co *coordinator) remeasure() {
	if !co.remote() {
		return
	}
	ctx, cancel := context.WithTimeout(co.ctx, 5*time.Second)
	defer cancel()
	for _, rn := range co.nodes {
		l, _, live := rn.current()
		if !live {
			continue
		}
		offset, eps, err := measureClock(ctx, l)
		if err != nil {
			continue
		}
		rn.mu.Lock()
		drift := offset - rn.offset
		if drift < 0 {
			drift = -drift
		}
		rn.eps = max(rn.eps, eps) + drift
		rn.mu.Unlock()
	}
}

// clockError is the bound of the history's clock error: zero when the
// nodes read this machine's clock; the largest measured bound of a
// node's offset otherwise. The run's ClockError is its floor.
func (co *coordinator) clockError() int64 {
	e := int64(co.r.cfg.ClockError)
	if co.remote() {
		for _, rn := range co.nodes {
			rn.mu.Lock()
			e = max(e, rn.eps)
			rn.mu.Unlock()
		}
	}
	return e
}

// share is the CPUs the coordinator runs on while the sale runs and the
// machine is quiet: its node processes' (Processes.Share); 0 (every CPU)
// for nodes elsewhere or none, and when a server of the run runs in this
// process (the embedded one), which the share would hold back.
func (r *run) share() int {
	if r.hostsServer() {
		return 0
	}
	switch l := r.cfg.Launcher.(type) {
	case Processes:
		return l.Share
	case *Processes:
		return l.Share
	}
	return 0
}

// hostsServer reports whether a server of the run runs in this process.
func (r *run) hostsServer() bool {
	if _, ok := r.store.(servers.InProcess); ok {
		return true
	}
	if s := r.cfg.Servers; s != nil {
		if _, ok := s.Redis.(servers.InProcess); ok {
			return true
		}
		for _, srv := range s.Others() {
			if _, ok := srv.(servers.InProcess); ok {
				return true
			}
		}
	}
	return false
}

// localNodes are the PIDs of the run's nodes that are processes of this
// machine's (children; not containers), as they are now: a node started
// again has a new one. None without a coordinator.
func (r *run) localNodes() []int {
	if r.coord == nil {
		return nil
	}
	var pids []int
	for _, rn := range r.coord.nodes {
		if _, proc, live := rn.current(); live {
			if c, ok := proc.(*child); ok {
				pids = append(pids, c.pid())
			}
		}
	}
	return pids
}

// mergeHealth folds every node's own health into h.
func (co *coordinator) mergeHealth(h *history.Health) {
	for _, rn := range co.nodes {
		rn.mu.Lock()
		if rn.health != nil {
			// The node's stalls while the coordinator stopped it are the
			// fault's, not the harness's: its timer began its sleep up to
			// a Tick before the stop, and wakes after the continue. Only
			// a process on this machine is stopped (a child, a
			// container), which reads this one's monotonic clock.
			nh := *rn.health
			nh.Discount(rn.stops, int64(health.Tick))
			if _, ok := rn.proc.(*child); ok {
				// A child may count the coordinator and its sibling nodes
				// as other processes (it leaves them out only on its
				// share of the CPUs); the coordinator, on the same
				// machine, leaves them out (localNodes), and its figure
				// stands.
				nh.Others = -1
			}
			h.Merge(nh)
		}
		rn.mu.Unlock()
	}
}

// mergeAttempt keeps what a node reported of buyer c's attempt so far.
func (r *run) mergeAttempt(c int32, attempt int16, ops []history.Op) {
	s := r.slots(c)
	i := int(attempt) * r.cart
	if i < 0 || i+len(ops) > len(s) {
		return
	}
	copy(s[i:], ops)
}

// crashAttempt records buyer c's attempt as crashed at at, from what its
// node reported of it (at its last probe, or nothing past its start).
// What it did after that is unknown, so a write it may have sent is
// indeterminate: from its last known instant on it may have taken a unit
// (a blind sale, if its read was not reported).
func (r *run) crashAttempt(c int32, attempt int16, start, at int64) {
	items, reader := r.cartOf(c)
	s := r.slots(c)
	base := int(attempt) * r.cart
	for j := range items {
		op := &s[base+j]
		if op.Start == 0 {
			arrival := op.Arrival
			if attempt > 0 || arrival == 0 {
				arrival = start
			}
			*op = history.Op{Client: c, Attempt: attempt, Node: int16(int(c) % r.cfg.Nodes), Item: int32(items[j]), Stock: history.NoStock, Arrival: arrival, Start: start}
		}
		op.Crash = max(at, op.Start)
		if !reader && op.Outcome == history.Pending && op.WriteReturn == 0 {
			op.Write = history.Indeterminate
			if op.WriteCall == 0 {
				op.WriteCall = max(op.Start, op.AcquireCall, op.Acquired, op.ReadCall, op.ReadReturn)
			}
		}
		op.End = 0
		op.Outcome = history.Crashed
	}
}

// lastLines is the end of a process's output, on one line, for errors.
func lastLines(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "it printed nothing"
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " / ")
}

// remote levers: the node's pause and skew, on its process.

// current is the node's incarnation now: its link and process, and
// whether it runs the sale.
func (rn *remoteNode) current() (l *nodeproto.Link, proc Process, live bool) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.link, rn.proc, rn.live
}

// stop freezes the node: first its own pause (so that a client let
// through later is the only one to go on), then its process.
func (rn *remoteNode) stop() {
	l, proc, live := rn.current()
	if !live {
		return
	}
	ctx, cancel := context.WithTimeout(rn.co.ctx, 5*time.Second)
	defer cancel()
	l.Call(ctx, &nodeproto.Message{Kind: nodeproto.Pause})
	from := rn.co.r.now()
	if proc.Stop() == nil {
		rn.mu.Lock()
		if rn.stoppedAt < 0 {
			rn.stoppedAt = from
		}
		rn.mu.Unlock()
	}
}

// stopEnded records that the node's process runs again, or is gone: the
// end of the stop on, if one is.
func (rn *remoteNode) stopEnded() {
	to := rn.co.r.now()
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.stoppedAt < 0 {
		return
	}
	rn.stops = append(rn.stops, history.Span{From: rn.stoppedAt, To: to})
	rn.stoppedAt = -1
}

// through lets client k go on alone: its node's process runs again, its
// own pause holding the rest.
func (rn *remoteNode) through(k int32) {
	l, proc, live := rn.current()
	if !live {
		return
	}
	l.Send(&nodeproto.Message{Kind: nodeproto.Through, Client: k})
	proc.Continue()
	rn.stopEnded()
}

// cont lets the node run again.
func (rn *remoteNode) cont() {
	l, proc, live := rn.current()
	if !live {
		return
	}
	proc.Continue()
	rn.stopEnded()
	l.Send(&nodeproto.Message{Kind: nodeproto.Resume})
}

// skew moves the node's clock.
func (rn *remoteNode) skew(offset int64) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.live {
		rn.link.Send(&nodeproto.Message{Kind: nodeproto.Skew, T0: offset})
	}
}
