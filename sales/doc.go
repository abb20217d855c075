// Package sales holds lockbench's own sale protocols, each a
// workload.Sale: LockSale runs the sources' read-modify-write under any
// locks.Impl, NoLock and Atomic sell without a lock from the inventory in
// Redis, SQLSale sells from MySQL tables the database guards, and
// HTTPSale buys from a running service under test over lockbench's
// black-box protocol (docs/target-protocol.md).
//
// A sale says what happens to a workload.Recorder, which owns the
// attempt's history record; the engine (package workload) runs the
// nodes, the buyers and the faults and never imports this package. A
// team's own sale, whose inventory lives in its own store, implements
// workload.Sale the same way outside lockbench (examples/ownstore).
//
// The files follow the stores: redis.go is the inventory in Redis and its
// scripts (scripts/*.lua), lock.go the sales on it (NoLock, Atomic,
// LockSale), cart.go their carts and readers, sql.go the SQL sales and
// their tables, http.go the black-box sale.
package sales
