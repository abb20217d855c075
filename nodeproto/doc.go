// Package nodeproto is the node protocol: the messages a coordinator (the
// run) and its nodes in processes of their own exchange, over one TCP
// connection per node, in gob, and the Link that carries them. It is the
// same on one machine (--node-mode=process or docker) and on many
// (remote). In order, over TLS (see Accept and Connect):
//
//	coordinator → node   Challenge   a nonce
//	node → coordinator   Hello   its index, the token it was started with,
//	                             and its proof of the run's secret
//	coordinator → node   Ping…   round trips that measure its clock's offset
//	coordinator → node   Setup   the sale: implementation, workload, servers
//	node → coordinator   Ready   its clients and locks are up
//	coordinator → node   Go      the sale's start, on the node's clock
//	coordinator → node   Buyer   a buyer arrives (the coordinator schedules arrivals)
//	node → coordinator   Start   an attempt begins
//	node → coordinator   Probe   a probe point, with the attempt's record so far; the
//	                             coordinator's faults answer it (wait, go on, or crash)
//	node → coordinator   Done    a buyer is answered: its records, whole
//	coordinator → node   Pause, Through, Resume, Skew   the faults' levers
//	coordinator → node   Stop    the sale is over (cut short, or every buyer answered)
//	node → coordinator   End     its counters; then the coordinator closes the link
//	node → coordinator   Panicked   a goroutine of the node panicked (at any time): the
//	                             run ends as an internal error, and the node is stopped
//
// A node whose link ends leaves at once: a node never outlives its
// coordinator.
//
// What a link reads comes from outside the process, so a Link refuses
// what is not a message of this protocol with an error, never a panic: a
// message longer than MaxMessage (ErrTooLarge) before it is read, and
// bytes that do not decode, or decode to no known Kind (ErrMalformed).
// The engine (package workload) runs both sides; this package knows
// nothing of it, and carries the sale's shape as the engine encodes it.
package nodeproto
