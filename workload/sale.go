package workload

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/history"
	"github.com/redis/go-redis/v9"
)

// Sale is an implementation's sale protocol, the one seam every kind of
// implementation plugs into: where its inventory lives and how that is
// prepared, audited and cleared (Inventory), how a node readies itself
// for it (StartNode), and how one attempt buys (Seller), told to a
// Recorder that owns the attempt's history. Package sales holds
// lockbench's own: the sources' read-modify-write under any lock, the sales
// without a lock, the SQL sales and the black-box HTTP sale; a sale of a
// team's own store implements Sale outside lockbench.
//
// A Sale may also be a Supporter (several items, carts, readers) and a
// Scripted sale (Lua scripts loaded on every Redis its lock runs on).
type Sale interface {
	// Needs names the servers the sale runs on.
	Needs() servers.Needs
	// Guard says what guards the sale, for the history's header.
	Guard() Guard
	// Inventory is the run's store of the sale, made once per run before
	// the sale: the engine prepares it, pings it while the sale runs,
	// audits it and clears it. It fails with servers.ErrMissing when
	// env lacks its server.
	Inventory(env Env) (Inventory, error)
	// StartNode readies node n for the sale (its lock handles, its
	// connection pool) and returns the node's seller; ctx bounds the
	// set-up only. The engine closes the seller when the sale ends.
	StartNode(ctx context.Context, n *Node) (Seller, error)
}

// Guard is what guards a sale, as the history's header says it (Lockless,
// Fenced) and the checker reads it.
type Guard struct {
	// Lock is true when a lock guards the sale: the checker audits its
	// mutual exclusion.
	Lock bool
	// Fenced is true when the store checks the lock's fencing tokens and
	// refuses a stale holder's write.
	Fenced bool
	// Promises are what the lock promises (locks.Promises.History), which
	// the history's header records for the checker; nil for a sale whose
	// lock declares nothing, judged as before schema 3.
	Promises *history.Promises
}

// Inventory is where a run keeps its stock and orders (Redis keys under
// the run's prefix, MySQL tables, a service's own store). It is prepared
// before the sale, pinged while it runs, audited after it, then cleared.
type Inventory interface {
	// Prepare sets every item's stock, with no order. It fails with
	// ErrPrefixInUse (or the sale's own error: sales.ErrTablesInUse) when
	// the place is taken and force is false, with servers.ErrUnreachable
	// when the server does not answer.
	Prepare(ctx context.Context, stock int64, force bool) error
	// Audit reads the final state: the stock and every user's orders (of
	// each item and their sums, for a sale of several).
	Audit(ctx context.Context) (history.Final, error)
	// Clear removes what Prepare and the sale left.
	Clear(ctx context.Context) error
	// Ping asks the store's server whether it answers: a server silent
	// for Workload.LostAfter cuts the sale short.
	Ping(ctx context.Context) error
}

// Seller is one node's side of a sale: what StartNode readied (its lock
// handles, its pool) and the attempts of the node's buyers.
type Seller interface {
	// Sell is one attempt of a buyer at every item of a's cart, told to
	// the items' recorders as it goes.
	Sell(ctx context.Context, a *Attempt)
	// Close releases what StartNode took.
	Close() error
}

// Viewer is a Seller that shows a reader an item's stock (the product
// page of Workload.Reads), told to the recorder with Reading, Read and
// Viewed, or ViewFailed.
type Viewer interface {
	View(ctx context.Context, a *Attempt)
}

// Supporter is a Sale that runs more than one item to buyers only:
// several items, carts and readers (Workload.Items, Cart, Reads). A Sale
// that is not one runs the sources' one item, every buyer buying.
type Supporter interface {
	// Supports says whether the sale can run w's items, carts and
	// readers; its error wraps ErrWorkload.
	Supports(w Workload) error
}

// Pipeliner is a Sale whose attempt is one command, independent of every
// other buyer's, so that a node can send several buyers' commands in one
// round trip (Workload.Pipeline): each is still recorded from its buyer's
// start to its own reply, and a failed round trip leaves each of its
// commands unknown.
type Pipeliner interface {
	// Pipelines marks the sale; it is never called.
	Pipelines()
}

// MaxPipeline is the most commands Workload.Pipeline lets share a round
// trip.
const MaxPipeline = 10000

// ErrPipeline is Supports's refusal of a Workload.Pipeline (out of its
// bounds, or for a sale that is not a Pipeliner); it matches ErrWorkload
// too.
var ErrPipeline = fmt.Errorf("%w (pipeline)", ErrWorkload)

// Scripted is a Sale whose lock runs Lua scripts: they are loaded on
// every Redis the lock runs on before the sale.
type Scripted interface {
	Scripts() []*redis.Script
}

// Env is what a sale's Inventory is made of.
type Env struct {
	// Servers are the run's servers; the sale uses those its Needs name.
	Servers *servers.Set
	// Redis is the run's own client of its Redis (set-up, audit,
	// faults), not a node's: nil when the run has none.
	Redis *redis.Client
	// Keys are the run's keys.
	Keys Keys
	// Workload is the sale's shape.
	Workload Workload
}

// Keys are the names a run keeps in Redis, all under its prefix: the
// run claims the prefix on every Redis a sale that needs Redis runs on
// (refused when it holds keys, unless Workload.Force) and clears it
// after the sale. An inventory in Redis keeps its own keys under it.
type Keys struct {
	// Prefix is Workload.Prefix and the implementation's name:
	// "lockbench:lua:".
	Prefix string
	// Locks are each item's lock key, item 0 first: one for a sale of
	// one item (Prefix+"lock"), Prefix+"lock:i" for item i of several.
	Locks []string
}

// Items is how many items are on sale.
func (k Keys) Items() int { return len(k.Locks) }

// ErrWorkload means the workload asks what the sale cannot do: several
// items or readers of a sale whose stock is not in lockbench's Redis, a
// cart of several items under a lock that takes one at a time.
var ErrWorkload = errors.New("workload: not for this sale")

// ErrNotSent is matched (errors.Is) by the error of a command a node
// never sent: the buyer was dead or the run over before it left, or a
// fault cut the node off the server. A write that was not sent is known
// not to have happened.
var ErrNotSent = errors.New("workload: not sent")

// MaxItems is the most items a sale runs.
const MaxItems = 1000

// Supports says whether s can run w's items, carts, readers and
// pipeline: w's bounds, a pipeline only for a Pipeliner, then the sale's
// own word (Supporter); a sale that is not a Supporter runs one item,
// every buyer buying. The error wraps ErrWorkload.
func Supports(s Sale, w Workload) error {
	items := max(1, w.Items)
	switch {
	case w.Items < 0 || w.Items > MaxItems:
		return fmt.Errorf("%w: items must be between 1 and %d, got %d", ErrWorkload, MaxItems, w.Items)
	case w.Reads < 0 || w.Reads > 100:
		return fmt.Errorf("%w: reads is a percentage of the buyers, 0 to 100, got %d", ErrWorkload, w.Reads)
	case w.Cart < 0 || w.Cart > items:
		return fmt.Errorf("%w: a cart must hold between 1 and the items (%d), got %d", ErrWorkload, items, w.Cart)
	case w.Pipeline < 0 || w.Pipeline > MaxPipeline:
		return fmt.Errorf("%w: a pipeline holds between 0 and %d commands, got %d", ErrPipeline, MaxPipeline, w.Pipeline)
	}
	if _, ok := s.(Pipeliner); w.Pipeline > 0 && !ok {
		return fmt.Errorf("%w: a pipeline needs a sale whose attempt is one command (atomic)", ErrPipeline)
	}
	if sp, ok := s.(Supporter); ok {
		return sp.Supports(w)
	}
	if items > 1 || w.Reads > 0 || w.Cart > 1 {
		return fmt.Errorf("%w: several items, carts and readers need a sale whose stock is lockbench's Redis (a lock, none or atomic)", ErrWorkload)
	}
	return nil
}
