// Package workload runs one flash sale: buyers arriving on simulated
// nodes (each its own clients, pool, clock and pause), each attempt
// bought by the implementation's Sale and written down by a Recorder that
// owns its history record, faults pulled through Controls at the probe
// points, and the final state audited into a history.History.
//
// When buyers arrive is the Arrivals seam: Ramp spreads them over a window
// (Workload.Ramp, the default), Burst brings them all at once, and Rate
// is an open model that brings them at a constant rate whatever the
// system does (Workload.Rate). Latency counts from each buyer's scheduled
// arrival, so that a system that falls behind shows it.
//
// The Sale is the seam every implementation plugs into, exported so that
// a sale can live outside this package: its Inventory (where the stock
// lives: prepared, pinged, audited, cleared), StartNode (a node's Seller,
// given the Node handle: its clients, clock, probe points, business step)
// and each Attempt, told to a Recorder per item. Package sales holds
// lockbench's own (the sources' sale under any lock, the sales without one,
// SQL, the black-box HTTP sale); this package never imports it.
// The servers a sale runs on are Servers: a Redis Backend (embedded,
// external or a Cluster of independent ones), a ZooKeeperServer, a MySQL
// and the Endpoints of a service under test, each a Server; the Reach of
// a run is what its faults can act on.
//
// The files follow the concerns: run.go is the engine (Run, the nodes,
// the arrival loop), arrivals.go the arrival processes, buyer.go a buyer's
// attempts, sale.go the Sale seam, handles.go the Node and Attempt a sale
// is given, recorder.go the Recorder and the history record, store.go the
// run's keys, progress.go the progress snapshots, node.go and controls.go
// the nodes and the levers faults pull; coordinator.go runs nodes in
// processes of their own (a Launcher's) and nodeside.go is a node's side,
// both speaking package nodeproto's protocol.
package workload
