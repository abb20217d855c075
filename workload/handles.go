package workload

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/internal/ctxtime"
	"github.com/lockbench/lockbench/locks"
	"github.com/redis/go-redis/v9"
)

// Node is one node of a running sale as its Sale sees it: its clients,
// its clock, its probe points and business step, the run's shape and
// keys. The engine makes it and hands it to Sale.StartNode; every call
// the node's buyers make through it passes the node's pause, so that a
// fault that pauses the node stops them all.
type Node struct {
	r *run
	n *node
}

// ID is the node's index in the sale, from zero.
func (n *Node) ID() int { return n.n.id }

// Redis is the node's own client of the run's Redis, with its pool,
// command timeout, fault routing, pause and command count; nil when the
// sale does not need Redis.
func (n *Node) Redis() *redis.Client { return n.n.client }

// Now is the node's wall clock, which a fault may skew.
func (n *Node) Now() time.Time { return n.n.now() }

// Workload is the sale's shape: its pool size, command timeout, hold,
// reentry, items.
func (n *Node) Workload() Workload { return n.r.cfg.Workload }

// Servers are the run's servers as the run holds them (the MySQL of a
// SQL sale, the Endpoints of a service under test). A sale whose store
// its clients dial by address reaches it through Server instead, so that
// the node's link faults reach it.
func (n *Node) Servers() *servers.Set { return n.r.cfg.Servers }

// Server is the run's server of kind k as the node reaches it: an
// Addressed server rebuilt (by its kind's KindInfo.Node) from its
// addresses routed through the node's fault proxy (in its whole spec,
// servers.SpecAt), so that latency,
// partition and cut-link reach the node's link to it; any other as the
// run holds it; nil when the run has none.
func (n *Node) Server(k servers.Kind) (servers.Server, error) {
	srv := n.r.cfg.Servers.Get(k)
	a, ok := srv.(servers.Addressed)
	info, known := servers.Lookup(k)
	if !ok || !known || info.Node == nil {
		return srv, nil
	}
	addrs, err := n.r.routed(n.n, a.Addrs())
	if err != nil {
		return nil, err
	}
	spec, err := servers.SpecAt(a, addrs)
	if err != nil {
		return nil, err
	}
	return info.Node(spec)
}

// Keys are the run's keys.
func (n *Node) Keys() Keys { return n.r.keys.export() }

// Probe is the probe point p of a buyer of the node (ctx is the
// buyer's): it waits out the node's pause, then asks the fault injector,
// whose error (a crash, the run's end) means the buyer stops where it is.
func (n *Node) Probe(ctx context.Context, p locks.Point) error { return n.r.probe(ctx, n.n, p) }

// Business is the business step inside a sale, between its read and its
// write: the Business probe point, then Workload.Hold, after which the
// buyer waits out the node's pause, if one began during the hold. It
// returns false when the buyer was stopped there.
func (n *Node) Business(ctx context.Context) bool {
	if err := n.Probe(ctx, locks.Business); err != nil {
		return false
	}
	if hold := n.r.cfg.Hold; hold > 0 {
		if err := ctxtime.Sleep(ctx, hold); err != nil {
			return false
		}
		if err := n.n.pause.wait(ctx); err != nil || ctx.Err() != nil {
			return false
		}
	}
	return true
}

// Admit lets cmds commands to a store the node reaches other than by its
// Redis client (a SQL statement, an HTTP request) past the node's pause
// and counts them, as the Redis client does its own. Its error, when the
// buyer died or the run ended meanwhile, matches ErrNotSent.
func (n *Node) Admit(ctx context.Context, cmds int64) error {
	return hook{n.n}.admit(ctx, cmds)
}

// LockEnv is the environment of the node's handle on a lock that lives
// on uses (locks.Env): the node's id, its Redis client and those of a
// lock's other servers, the lease, its clock, its probe points, and its
// way to the server of kind uses when that is not Redis (Remote, routed
// through the node's fault proxy); Key is item 0's lock key, Keys unset
// (see Keys).
func (n *Node) LockEnv(uses locks.Uses) (locks.Env, error) {
	remote, err := n.r.remoteEnv(n.n, servers.Kind(uses))
	if err != nil {
		return locks.Env{}, err
	}
	return locks.Env{
		Node:    n.n.id,
		Redis:   n.n.client,
		Key:     n.r.keys.locks[0],
		TTL:     n.r.cfg.TTL,
		Now:     n.n.now,
		Probe:   n.r.prober(n.n),
		Servers: lockServers(n.n.servers),
		Remote:  remote,
		Go:      n.r.goSafe,
	}, nil
}

// Go starts f as one of the run's goroutines: a panic in it ends the run
// as an internal error (safego), as one in a buyer would.
func (n *Node) Go(f func()) { n.r.goSafe(f) }

// Answered counts a purchase a service under test answered in its
// protocol.
func (n *Node) Answered() { n.r.answered.Add(1) }

// Unanswered keeps the first purchase a service under test did not answer
// in its protocol (an answer that broke it, none in time, a refused
// connection), said as what: a run in which buyers tried and none was
// answered fails with ErrTarget, naming the first.
func (n *Node) Unanswered(what string) { n.r.firstBad.CompareAndSwap(nil, &what) }

// BrokeProtocol keeps an answer of a service under test that is outside
// its protocol (a redirect, an outcome it does not define, a field of the
// wrong type or missing), said as what, naming the buyer and the field.
// Such an answer is the service's error, not an unknown outcome: the run
// fails with ErrAnswer naming the first, however many were answered well.
func (n *Node) BrokeProtocol(what string) {
	n.r.broken.Add(1)
	n.r.firstBroken.CompareAndSwap(nil, &what)
}

// Attempt is one attempt of one buyer, as the engine hands it to a
// Seller: who buys, the items of its cart, and a Recorder for each.
type Attempt struct {
	// Client is the buyer, as the history numbers it.
	Client int32
	// User is the buyer's user id, Client in decimal: the one the store
	// keeps the order under.
	User string
	// Owner is the attempt's lock owner value: the node's id, the buyer
	// and the attempt ("4f1c…:17.0"), unique across the sale.
	Owner string
	// Items are the indexes of the attempt's items, in order: one for a
	// buyer of one item, 1 to Workload.Cart for a cart (bought all or
	// none).
	Items []int
	// Cart is the recorder of each item of Items, in the same order.
	Cart []Recorder
}

// Rec is the recorder of the attempt's first item: the only one of an
// attempt at one item.
func (a *Attempt) Rec() Recorder { return a.Cart[0] }

// Trace is the locks.Trace of the attempt's lease: one for a cart's
// items, telling each item's recorder. A sale acquires the lock with it
// in its context (locks.WithTrace).
func (a *Attempt) Trace() locks.Trace {
	if len(a.Cart) == 1 {
		return a.Cart[0]
	}
	return cartTrace(a.Cart)
}

// cartTrace tells every item of a cart the same trace.
type cartTrace []Recorder

func (c cartTrace) Trying() {
	for _, rec := range c {
		rec.Trying()
	}
}

func (c cartTrace) Granted(lease, server time.Duration) {
	for _, rec := range c {
		rec.Granted(lease, server)
	}
}

func (c cartTrace) Renewing() func(ok bool) {
	done := make([]func(bool), len(c))
	for i, rec := range c {
		done[i] = rec.Renewing()
	}
	return func(ok bool) {
		for _, d := range done {
			d(ok)
		}
	}
}

// Each tells every item's recorder the same event.
func (a *Attempt) Each(event func(Recorder)) {
	for _, rec := range a.Cart {
		event(rec)
	}
}
