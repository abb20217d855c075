package harness

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/workload"
)

// Impl is one implementation lockbench runs: a sale, with or without a
// lock, and what the seeds call it. Its Sale carries the protocol and the
// servers it needs.
type Impl struct {
	// Name is the --impl value.
	Name string
	// Summary is one line for `lockbench list`.
	Summary string
	// Seed names the seed article and listing it reproduces.
	Seed string
	// Notes record where the implementation departs from its seed, and why.
	Notes string
	// Reentrant is true when an owner may acquire the lock it holds
	// (--reentry).
	Reentrant bool
	// Locked is true when a lock guards the sale (its reentry can be asked
	// for, lock faults apply).
	Locked bool
	// DefaultTTL is the seed's lease when none is given (zero: no lease).
	DefaultTTL time.Duration
	// Sale is the sale protocol.
	Sale workload.Sale
}

// Needs are the servers the implementation runs on.
func (im Impl) Needs() workload.Needs { return im.Sale.Needs() }

// Lock makes the Impl of a lock algorithm: the seeds' read-modify-write
// under it, with the servers it lives on.
func Lock(l locks.Impl) Impl {
	return Impl{
		Name:       l.Name,
		Summary:    l.Summary,
		Seed:       l.Seed,
		Notes:      l.Notes,
		Reentrant:  l.Reentrant,
		Locked:     true,
		DefaultTTL: l.DefaultTTL,
		Sale:       sales.LockSale(l),
	}
}

// The sales without a lock.
var (
	noneImpl = Impl{
		Name:    "none",
		Summary: "no lock: GET, check, SET races between buyers",
		Seed:    "001 first listing; 003 baseline",
		Sale:    sales.NoLock(),
	}
	lockless = []Impl{
		{
			Name:    "atomic",
			Summary: "no lock: one Lua script checks the stock and decrements it in Redis",
			Seed:    "the Redis form of the seeds' conditional UPDATE (001, 002)",
			Sale:    sales.Atomic(),
		},
		{
			Name:    "mysql",
			Summary: "no lock: UPDATE stock = stock - 1 WHERE id = ? AND stock >= 1 in MySQL/MariaDB, the order in the same transaction",
			Seed:    "001 deductStockMySqlPessimistic; 002 MysqlLock.tryUpdate",
			Notes:   "The seeds send the UPDATE alone; lockbench wraps it in a transaction with a SELECT of the stock just written (the row is still locked, so it reads the value the UPDATE left, and stock+1 is what the sale read) and the INSERT of the order, whose unique key on the user is one order per user. A statement that fails before COMMIT leaves nothing committed; a COMMIT that fails after it was sent has an unknown outcome. Needs --mysql-dsn (or $LOCKBENCH_MYSQL_DSN).",
			Sale:    sales.SQLSale(sales.SQLConditional),
		},
		{
			Name:    "mysql-for-update",
			Summary: "pessimistic row lock: SELECT stock ... FOR UPDATE, business step, UPDATE stock = read-1, COMMIT",
			Seed:    "001 悲观锁 (row lock); the JVM read-check-write of 001 and 003 moved into a transaction",
			Notes:   "The row lock is held from the SELECT to the COMMIT, across the business step (the probe point where pause-holder and slow-holder strike): waiters queue on the row in the server, so a paused holder stalls the sale but cannot be overtaken. A holder that dies closes its connection and the server rolls back, freeing the row. Waiters that queue past --command-timeout give up with nothing committed. Needs --mysql-dsn.",
			Sale:    sales.SQLSale(sales.SQLForUpdate),
		},
		{
			Name:    "mysql-version",
			Summary: "optimistic: SELECT stock, version; business step; UPDATE ... WHERE version = read, retried on a conflict",
			Seed:    "001 乐观锁 (named, no listing)",
			Notes:   "Seed 001 names version-number optimistic locking and shows no code; lockbench writes stock = read-1, version = version+1 WHERE id = ? AND version = read, with the order INSERT in the same transaction, and retries from the read (after a jittered exponential pause, 1-32 ms, as lua waits) until it sells, finds the stock gone, or the buyer's context ends. A pause or slow step between read and write only costs a retry. The history keeps the last try's read. Needs --mysql-dsn.",
			Sale:    sales.SQLSale(sales.SQLVersion),
		},
	}
)

// Service is the implementation of a running service under test, reached
// over HTTP (backends.Options.Targets): its lock, whatever it is, is inside
// it. It is not in the registry: a run names its targets instead.
func Service() Impl {
	return Impl{
		Name:    "service",
		Summary: "a running service under test, driven over HTTP through lockbench's black-box protocol (--target)",
		Seed:    "the seeds' two Tomcat instances driven by JMeter",
		Sale:    sales.HTTPSale(),
	}
}

// registry is every implementation: the built-in ones in the seeds'
// order (none first, the lockless sales before fenced, the third-party
// locks last), then those Register added.
var registry = struct {
	sync.RWMutex
	list []Impl
}{list: builtin()}

func builtin() []Impl {
	out := []Impl{noneImpl}
	for _, l := range locks.All() {
		if l.Name == "fenced" {
			out = append(out, lockless...)
		}
		out = append(out, Lock(l))
	}
	return out
}

// Sentinel errors of the registry, matched with errors.Is.
var (
	// ErrImpl means an implementation could not be registered: no name,
	// no sale, or a name already taken.
	ErrImpl = errors.New("harness: bad implementation")
)

// Register adds an implementation to the registry, after the built-in
// ones: from then on the CLI, the matrix and Run know it by name. It
// fails with ErrImpl when im has no name or no sale, or its name is
// taken.
func Register(im Impl) error {
	registry.Lock()
	defer registry.Unlock()
	switch {
	case im.Name == "" || im.Name == "all":
		return fmt.Errorf("%w: name %q", ErrImpl, im.Name)
	case im.Sale == nil:
		return fmt.Errorf("%w: %s has no sale", ErrImpl, im.Name)
	case slices.ContainsFunc(registry.list, func(x Impl) bool { return x.Name == im.Name }):
		return fmt.Errorf("%w: %s is already registered", ErrImpl, im.Name)
	}
	registry.list = append(registry.list, im)
	return nil
}

// All returns every implementation, in the order the seeds build them,
// then those Register added.
func All() []Impl {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.list)
}

// Lookup returns the implementation called name.
func Lookup(name string) (Impl, bool) {
	registry.RLock()
	defer registry.RUnlock()
	for _, im := range registry.list {
		if im.Name == name {
			return im, true
		}
	}
	return Impl{}, false
}

// Names returns the implementations' names, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.list))
	for _, im := range registry.list {
		out = append(out, im.Name)
	}
	sort.Strings(out)
	return out
}
