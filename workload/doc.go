// Package workload runs one flash sale: buyers arriving on simulated
// nodes (each its own clients, pool, clock and pause), each attempt
// bought by the implementation's Sale and written down by a recorder that
// owns its history record, faults pulled through Controls at the probe
// points, and the final state audited into a history.History.
//
// When buyers arrive is the Arrivals seam: Ramp spreads them over a window
// (Workload.Ramp, the default), Burst brings them all at once, and Rate
// is an open model that brings them at a constant rate whatever the
// system does (Workload.Rate). Latency counts from each buyer's scheduled
// arrival, so that a system that falls behind shows it.
//
// The Sale is the seam every implementation plugs into: LockSale runs the
// seeds' read-modify-write under any locks.Impl, NoLock, Atomic and
// SQLSale sell without a lock, and HTTPSale buys from a running service
// under test over lockbench's black-box protocol (docs/target-protocol.md).
// The servers a sale runs on are Servers: a Redis Backend (embedded,
// external or a Cluster of independent ones), a ZooKeeperServer, a MySQL
// and the Endpoints of a service under test, each a Server; the Reach of
// a run is what its faults can act on.
//
// The files follow the concerns: run.go is the engine (Run, the nodes,
// the arrival loop), arrivals.go the arrival processes, buyer.go a buyer's
// attempts, recorder.go the history record, progress.go the progress
// snapshots, sale.go, sqlsale.go and httpsale.go the sales, node.go and
// controls.go the nodes and the levers faults pull.
package workload
