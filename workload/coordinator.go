package workload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/monoclock"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/nodeproto"
)

// ErrNodesUnsupported means a sale cannot run on nodes in processes of
// their own (see SupportsNodes).
var ErrNodesUnsupported = errors.New("workload: not supported on nodes in processes")

// errNodeLost is the cause of a sale cut short because a node's process
// ended without a fault killing it.
var errNodeLost = fmt.Errorf("%w: a node's process ended", servers.ErrUnreachable)

// helloTimeout bounds how long a launched node may take to dial in.
const helloTimeout = 30 * time.Second

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
	return nil
}

// NodesOnFailover is the refusal of nodes in processes (a Launcher of the
// mode named) on a Redis reached through Sentinel: the failover client's
// way to the primary is not carried to them. It wraps ErrNodesUnsupported.
func NodesOnFailover(mode string) error {
	return fmt.Errorf("%w: the Sentinel topology's clients are not carried to nodes in processes (--node-mode=%s) yet: use --node-mode=inproc with Sentinel", ErrNodesUnsupported, mode)
}

// coordinator runs a sale's nodes as processes: it launches them, sends
// each its buyers at their scheduled arrival, answers their probes with
// the run's faults, pulls the faults' levers on them, and merges what
// they record into the run's history.
type coordinator struct {
	r     *run
	ctx   context.Context // the run's: launches and restarts end with it
	ln    net.Listener
	addr  string
	nodes []*remoteNode
	// lose cuts the sale short (a node lost).
	lose context.CancelCauseFunc

	mu sync.Mutex
	// hellos are the launched nodes waiting to dial in, by token.
	hellos map[string]chan *nodeproto.Link
	// outstanding counts the buyers delivered and not yet answered;
	// delivering is true until every arrival was delivered; all is closed
	// once both are done.
	outstanding int
	delivering  bool
	all         chan struct{}
	finishing   bool
	lost        error
	closed      bool
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
	// live is true while the node's incarnation runs the sale.
	live bool
	// killed is true once a fault killed the incarnation.
	killed  bool
	crashAt int64
	// inflight are the buyers delivered and not answered: their context
	// on this side (a probe's, which a kill cancels) and the attempt they
	// began (-1 before the first: the node's next incarnation serves
	// them, if this one dies first).
	inflight map[int32]*inflight
	// offset is the node's clock minus the coordinator's, eps the bound
	// of its error, both measured by round trips.
	offset, eps int64
	ended       chan struct{}
	// health is what the node measured of itself, from its end.
	health *history.Health
}

type inflight struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	attempt int16
	start   int64
}

func newCoordinator(r *run) *coordinator {
	return &coordinator{r: r, hellos: map[string]chan *nodeproto.Link{}, delivering: true, all: make(chan struct{})}
}

// launch listens, starts every node and waits until each is ready.
func (co *coordinator) launch(ctx context.Context) error {
	co.ctx = context.WithoutCancel(ctx)
	listen := co.r.cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("workload: the coordinator cannot listen on %s: %w", listen, err)
	}
	co.ln, co.addr = ln, ln.Addr().String()
	go co.accept()
	co.nodes = make([]*remoteNode, co.r.cfg.Nodes)
	for i := range co.nodes {
		n := &node{id: i}
		rn := &remoteNode{co: co, n: n, inflight: map[int32]*inflight{}}
		n.pause.remote = rn
		n.remote = rn
		co.nodes[i] = rn
		co.r.nodes = append(co.r.nodes, n)
	}
	// Launched together, waited for one by one: the nodes of a remote
	// launcher (pods) come up in any order.
	errs := make([]error, len(co.nodes))
	var wg sync.WaitGroup
	for i, rn := range co.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = rn.incarnate(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// accept takes the nodes' connections and hands each to the launch that
// waits for its token.
func (co *coordinator) accept() {
	for {
		conn, err := co.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			l := nodeproto.NewLink(conn)
			conn.SetReadDeadline(time.Now().Add(helloTimeout))
			m, err := l.Hello()
			conn.SetReadDeadline(time.Time{})
			if err != nil {
				l.Close()
				return
			}
			key := co.helloKey(m.Node, m.Token)
			co.mu.Lock()
			ch := co.hellos[key]
			delete(co.hellos, key)
			co.mu.Unlock()
			if ch == nil {
				l.Close() // nobody waits for it: a stray, or a second node with one index
				return
			}
			ch <- l
		}()
	}
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

// incarnate starts the node's process (again, after a kill), waits for
// it to dial in, measures its clock, sets it up and waits until it is
// ready. In a sale under way it then joins it: go, and its buyers.
func (rn *remoteNode) incarnate(ctx context.Context) error {
	co, i := rn.co, rn.n.id
	token := newUUID()
	key := co.helloKey(i, token)
	ch := make(chan *nodeproto.Link, 1)
	co.mu.Lock()
	co.hellos[key] = ch
	co.mu.Unlock()
	defer func() {
		co.mu.Lock()
		delete(co.hellos, key)
		co.mu.Unlock()
	}()
	proc, err := co.r.cfg.Launcher.Launch(ctx, i, co.addr, token)
	if err != nil {
		return fmt.Errorf("%w: node %d: %v", servers.ErrUnreachable, i, err)
	}
	var l *nodeproto.Link
	t := time.NewTimer(helloTimeout)
	defer t.Stop()
	select {
	case l = <-ch:
	case <-proc.Exited():
		return fmt.Errorf("%w: node %d's process ended before it dialed in: %s", servers.ErrUnreachable, i, lastLines(proc.Output()))
	case <-t.C:
		proc.Close()
		return fmt.Errorf("%w: node %d did not dial in within %v (%s launcher, coordinator at %s)", servers.ErrUnreachable, i, helloTimeout, co.r.cfg.Launcher.Mode(), co.addr)
	case <-ctx.Done():
		proc.Close()
		return context.Cause(ctx)
	}
	replies := make(chan *nodeproto.Message, 4)
	go rn.read(l, proc, replies)
	offset, eps, err := measureClock(ctx, l)
	if err != nil {
		proc.Close()
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
			return fmt.Errorf("%w: node %d: %s", servers.ErrUnreachable, i, m.Err)
		}
	case <-proc.Exited():
		return fmt.Errorf("%w: node %d's process ended while it started: %s", servers.ErrUnreachable, i, lastLines(proc.Output()))
	case <-ctx.Done():
		proc.Close()
		return context.Cause(ctx)
	}
	rn.mu.Lock()
	rn.proc, rn.link, rn.offset, rn.eps = proc, l, offset, eps
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
	rn.live = true
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
	s := &nodeproto.Assignment{Node: i, Nodes: r.cfg.Nodes, UUID: newUUID(), Impl: r.cfg.Name, Clients: r.cfg.Clients, Workload: encodeWorkload(r.cfg.Workload), Probes: r.cfg.Injector != nil}
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
// addresses routed through the node's fault proxy (Addressed), or its
// spec (Portable).
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
		return strings.Join(routed, ","), nil
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
// ready (or failed setup) goes to ready.
func (rn *remoteNode) read(l *nodeproto.Link, proc Process, ready chan<- *nodeproto.Message) {
	r := rn.co.r
	for {
		m, err := l.Recv()
		if err != nil {
			rn.gone(l, proc)
			return
		}
		switch m.Kind {
		case nodeproto.Pong, nodeproto.Ack:
			l.Answer(m)
		case nodeproto.Ready:
			ready <- m
		case nodeproto.Start:
			// Once the node is being killed no attempt may begin: without
			// the answer, the buyer never does, and its next incarnation
			// serves it.
			rn.mu.Lock()
			f := rn.inflight[m.Client]
			if f != nil && !rn.killed {
				f.attempt, f.start = m.Attempt, m.T0
				l.Send(&nodeproto.Message{Kind: nodeproto.Ack, ID: m.ID})
			}
			rn.mu.Unlock()
		case nodeproto.Probe:
			r.mergeAttempt(m.Client, m.Attempt, m.Ops)
			go rn.probe(l, m)
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

// answered marks buyer c answered.
func (rn *remoteNode) answered(c int32) {
	rn.mu.Lock()
	f := rn.inflight[c]
	delete(rn.inflight, c)
	rn.mu.Unlock()
	if f == nil {
		return
	}
	f.cancel(nil)
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
	waitExit(co.ctx, proc, 5*time.Second)
	proc.Close()
	rn.mu.Lock()
	if rn.link != l {
		rn.mu.Unlock()
		return // an incarnation that never joined
	}
	rn.live = false
	if rn.ended != nil {
		close(rn.ended)
		rn.ended = nil
	}
	killed := rn.killed
	at := rn.crashAt
	if !killed {
		at = r.now()
	}
	var crashed []int32
	for c, f := range rn.inflight {
		if f.attempt >= 0 {
			crashed = append(crashed, c)
			r.crashAttempt(c, f.attempt, f.start, at)
			f.cancel(ErrCrashed)
			delete(rn.inflight, c)
		}
	}
	rn.mu.Unlock()
	for range crashed {
		r.finished.Add(1)
	}
	co.done(len(crashed))
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
	go func() {
		if err := rn.incarnate(co.ctx); err != nil {
			co.fail(fmt.Errorf("%w: node %d could not be started again after its crash: %v", errNodeLost, rn.n.id, err))
		}
	}()
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

// cutBy gives the coordinator the function that cuts the sale short.
func (co *coordinator) cutBy(lose context.CancelCauseFunc) {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.lose = lose
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
		// is gone.
		l.Send(&nodeproto.Message{Kind: nodeproto.Die})
		<-l.Done()
	}
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
	co.mu.Lock()
	co.outstanding++
	co.mu.Unlock()
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.inflight[c] = &inflight{ctx: cctx, cancel: cancel, attempt: -1}
	if rn.live {
		rn.link.Send(&nodeproto.Message{Kind: nodeproto.Buyer, Client: c})
	}
}

// done counts k buyers answered.
func (co *coordinator) done(k int) {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.outstanding -= k
	co.check()
}

// check closes all once every buyer was delivered and answered; co.mu is
// held.
func (co *coordinator) check() {
	if !co.delivering && co.outstanding <= 0 && co.all != nil {
		close(co.all)
		co.all = nil
	}
}

// wait returns once every buyer delivered was answered, or ctx ends.
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
	co.remeasure()
	var ends []chan struct{}
	for _, rn := range co.nodes {
		rn.mu.Lock()
		if rn.link != nil && rn.ended != nil {
			ends = append(ends, rn.ended)
			rn.link.Send(&nodeproto.Message{Kind: nodeproto.Stop})
		}
		rn.mu.Unlock()
	}
	bound := time.NewTimer(10*time.Second + 2*co.r.cfg.CommandTimeout)
	defer bound.Stop()
	for _, e := range ends {
		select {
		case <-e:
		case <-bound.C:
		}
	}
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
	if co.ln != nil {
		co.ln.Close()
	}
	var wg sync.WaitGroup
	for _, rn := range co.nodes {
		l, proc, _ := rn.current()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l != nil {
				l.Close()
			}
			if proc != nil {
				proc.Continue()
				proc.Close()
			}
		}()
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

// mergeHealth folds every node's own health into h.
func (co *coordinator) mergeHealth(h *history.Health) {
	for _, rn := range co.nodes {
		rn.mu.Lock()
		if rn.health != nil {
			h.Merge(*rn.health)
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
	proc.Stop()
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
}

// cont lets the node run again.
func (rn *remoteNode) cont() {
	l, proc, live := rn.current()
	if !live {
		return
	}
	proc.Continue()
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
