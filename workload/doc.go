// Package workload runs one flash sale: buyers arriving on simulated
// nodes (each its own clients, pool, clock and pause), each attempt
// bought by the implementation's Sale and written down by a recorder that
// owns its history record, faults pulled through Controls at the probe
// points, and the final state audited into a history.History.
//
// The Sale is the seam every implementation plugs into: LockSale runs the
// seeds' read-modify-write under any locks.Impl, NoLock, Atomic and
// SQLSale sell without a lock. The servers a sale runs on are Servers:
// a Redis Backend (embedded, external or a Cluster of independent ones), a
// ZooKeeperServer and a MySQL, each a Server; the Target of a run is what
// its server faults act on.
package workload
