package harness

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// Impl is one implementation lockbench runs: a sale, with or without a
// lock, and what it is to its users. Its Info is the one identity of the
// implementation, the lock's own for a lock (Lock); its Sale carries the
// protocol and the servers it needs.
type Impl struct {
	locks.Info
	// Locked is true when a lock guards the sale (its reentry can be asked
	// for, lock faults apply).
	Locked bool
	// Sale is the sale protocol.
	Sale workload.Sale
}

// Needs are the servers the implementation runs on.
func (im Impl) Needs() servers.Needs { return im.Sale.Needs() }

// CheckReentry refuses a reentry (Workload.Reentry: nested acquisitions
// inside the critical section) that im's lock cannot do: a nested acquire
// of a lock that is not reentrant would wait for itself. A sale without a
// lock takes any reentry (there is nothing to acquire). The error wraps
// ErrPlan; Check makes it, and the CLI asks it of --reentry.
func (im Impl) CheckReentry(reentry int) error {
	if reentry > 0 && !im.Reentrant && im.Locked {
		return fmt.Errorf("%w: %s is not reentrant (a nested acquire would wait for itself)", ErrPlan, im.Name)
	}
	return nil
}

// Lock makes the Impl of a lock algorithm: the sources' read-modify-write
// under it, with the servers it lives on, known by the lock's Info.
func Lock(l locks.Impl) Impl {
	return Impl{Info: l.Info, Locked: true, Sale: sales.LockSale(l)}
}

// The sales without a lock.
var (
	noneImpl = Impl{
		Info: locks.Info{
			Name:    "none",
			Summary: "no lock: GET, check, SET races between buyers",
			Source:  "001 first listing; 003 baseline",
		},
		Sale: sales.NoLock(),
	}
	lockless = []Impl{
		{
			Info: locks.Info{
				Name:    "atomic",
				Summary: "no lock: one Lua script checks the stock and decrements it in Redis",
				Source:  "the Redis form of the sources' conditional UPDATE (001, 002)",
			},
			Sale: sales.Atomic(),
		},
		{
			Info: locks.Info{
				Name:    "mysql",
				Summary: "no lock: UPDATE stock = stock - 1 WHERE id = ? AND stock >= 1 in MySQL/MariaDB, the order in the same transaction",
				Source:  "001 deductStockMySqlPessimistic; 002 MysqlLock.tryUpdate",
				Notes:   "The sources send the UPDATE alone; lockbench wraps it in a transaction with a SELECT of the stock just written (the row is still locked, so it reads the value the UPDATE left, and stock+1 is what the sale read) and the INSERT of the order, whose unique key on the user is one order per user. A statement that fails before COMMIT leaves nothing committed; a COMMIT that fails after it was sent has an unknown outcome. Needs --mysql-dsn (or $LOCKBENCH_MYSQL_DSN).",
			},
			Sale: sales.SQLSale(sales.SQLConditional),
		},
		{
			Info: locks.Info{
				Name:    "mysql-for-update",
				Summary: "pessimistic row lock: SELECT stock ... FOR UPDATE, business step, UPDATE stock = read-1, COMMIT",
				Source:  "001 悲观锁 (row lock); the JVM read-check-write of 001 and 003 moved into a transaction",
				Notes:   "The row lock is held from the SELECT to the COMMIT, across the business step (the probe point where pause-holder and slow-holder strike): waiters queue on the row in the server, so a paused holder stalls the sale but cannot be overtaken. A holder that dies closes its connection and the server rolls back, freeing the row. Waiters that queue past --command-timeout give up with nothing committed. Needs --mysql-dsn.",
			},
			Sale: sales.SQLSale(sales.SQLForUpdate),
		},
		{
			Info: locks.Info{
				Name:    "mysql-version",
				Summary: "optimistic: SELECT stock, version; business step; UPDATE ... WHERE version = read, retried on a conflict",
				Source:  "001 乐观锁 (named, no listing)",
				Notes:   "Source 001 names version-number optimistic locking and shows no code; lockbench writes stock = read-1, version = version+1 WHERE id = ? AND version = read, with the order INSERT in the same transaction, and retries from the read (after a jittered exponential pause, 1-32 ms, as lua waits) until it sells, finds the stock gone, or the buyer's context ends. A pause or slow step between read and write only costs a retry. The history keeps the last try's read. Needs --mysql-dsn.",
			},
			Sale: sales.SQLSale(sales.SQLVersion),
		},
	}
)

// Service is the implementation of a running service under test, reached
// over HTTP (backends.Options.Endpoints): its lock, whatever it is, is inside
// it. It is not in the registry: a run names the service's endpoints instead.
func Service() Impl {
	return Impl{
		Info: locks.Info{
			Name:    "service",
			Summary: "a running service under test, driven over HTTP through lockbench's black-box protocol (--target)",
			Source:  "the sources' two Tomcat instances driven by JMeter",
		},
		Sale: sales.HTTPSale(),
	}
}

// registry is every implementation: the built-in ones, then those
// Register added, in the order they were added.
var registry = struct {
	sync.RWMutex
	list []Impl
}{list: builtin()}

// builtin lists lockbench's own implementations in the sources' order: the
// sale without a lock, the lock algorithms and the lockless sales the
// source articles build, then the designs beyond them (locks.Info.Beyond:
// fencing tokens, the third-party locks).
func builtin() []Impl {
	out := []Impl{noneImpl}
	for _, l := range locks.All() {
		out = append(out, Lock(l))
	}
	out = append(out, lockless...)
	slices.SortStableFunc(out, func(a, b Impl) int {
		return cmp.Compare(b2i(a.Beyond), b2i(b.Beyond))
	})
	return out
}

// b2i orders false before true.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Sentinel errors of the registry, matched with errors.Is.
var (
	// ErrImpl means an implementation could not be registered: it has
	// no name, a reserved one (all), or no sale.
	ErrImpl = errors.New("harness: bad implementation")
	// ErrDuplicate means an implementation could not be registered: its
	// name is taken, by a built-in implementation or one registered
	// before.
	ErrDuplicate = errors.New("harness: implementation already registered")
)

// Register adds an implementation to the registry, after the built-in
// ones and those registered before: from then on the CLI, the matrix and
// Run know it by name. It is the one way to add an implementation; a lock
// algorithm is registered as Lock(l). It fails with ErrImpl when im has
// no name or no sale, and with ErrDuplicate when its name is taken.
func Register(im Impl) error {
	registry.Lock()
	defer registry.Unlock()
	switch {
	case im.Name == "" || im.Name == "all":
		return fmt.Errorf("%w: name %q", ErrImpl, im.Name)
	case im.Sale == nil:
		return fmt.Errorf("%w: %s has no sale", ErrImpl, im.Name)
	case slices.ContainsFunc(registry.list, func(x Impl) bool { return x.Name == im.Name }):
		return fmt.Errorf("%w: %s", ErrDuplicate, im.Name)
	}
	registry.list = append(registry.list, im)
	return nil
}

// All returns every implementation, the built-in ones in the sources'
// order (builtin), then those Register added. The slice is a copy.
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
