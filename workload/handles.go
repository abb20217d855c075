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

// Servers are the run's servers (the MySQL of a SQL sale, the Targets of
// a service under test).
func (n *Node) Servers() *servers.Set { return n.r.cfg.Servers }

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

// LockEnv is the environment of the node's handle on a lock (locks.Env):
// the node's id, its Redis client and those of a lock's other servers,
// the lease, its clock, its probe points, its way to the server the lock lives on when that
// is not Redis (Remote); Key
// is item 0's lock key, Keys unset (see Keys).
func (n *Node) LockEnv() (locks.Env, error) {
	remote, err := n.r.remoteEnv(n.n)
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
	}, nil
}

// Answered counts a purchase a service under test answered in its
// protocol.
func (n *Node) Answered() { n.r.answered.Add(1) }

// Unanswered keeps the first purchase a service under test did not answer
// in its protocol (an answer that broke it, none in time, a refused
// connection), said as what: a run in which buyers tried and none was
// answered fails with ErrTarget, naming the first.
func (n *Node) Unanswered(what string) { n.r.firstBad.CompareAndSwap(nil, &what) }

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

// Each tells every item's recorder the same event.
func (a *Attempt) Each(event func(Recorder)) {
	for _, rec := range a.Cart {
		event(rec)
	}
}
