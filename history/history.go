// Package history defines what lockbench records of a run: one Op per
// purchase attempt, the server-side state found after the run, and the
// faults injected while it ran. The workload writes histories; the checker
// and the reports only read them, so this package knows nothing of Redis.
//
// Timestamps are nanoseconds on the run's monotonic clock, counted from the
// run's start; nodes that ran as processes of their own had theirs mapped
// onto the coordinator's clock, within Header.ClockError. Every recorded
// instant is positive; zero means "did not
// happen". An operation whose write outcome is unknown has no WriteReturn:
// the write may land at any later time, and the checker treats it so.
package history

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Outcome is what a purchase attempt answered its buyer.
type Outcome uint8

// The outcomes of a purchase attempt.
const (
	// Pending means the attempt never finished: the run was cut short.
	Pending Outcome = iota
	// Sold means the buyer was told the unit is theirs.
	Sold
	// SoldOut means the stock read was zero.
	SoldOut
	// Duplicate means the buyer already had an order (one order per user).
	Duplicate
	// Rejected means the store refused a write carrying a stale fencing token.
	Rejected
	// Unknown means a command failed after the write was sent: it may or
	// may not have been applied.
	Unknown
	// Failed means a command failed before any write was sent.
	Failed
	// GaveUp means the lock could not be obtained in time.
	GaveUp
	// Crashed means a fault killed the client during the attempt.
	Crashed
	// Viewed means the attempt only read the stock (a product page, with
	// --reads) and was shown it; it buys nothing. A read that failed has
	// no stock.
	Viewed
	// CartRefused means the attempt's item had stock, but another item of
	// the same cart was sold out or already ordered by the buyer: a cart
	// buys all its items or none, so nothing was written.
	CartRefused
)

var outcomeNames = [...]string{"pending", "sold", "sold-out", "duplicate", "rejected", "unknown", "failed", "gave-up", "crashed", "read", "cart-refused"}

// String returns the outcome's name as it appears in JSON.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "invalid"
}

// MarshalText encodes the outcome by name.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText decodes an outcome name.
func (o *Outcome) UnmarshalText(b []byte) error {
	for i, n := range outcomeNames {
		if n == string(b) {
			*o = Outcome(i)
			return nil
		}
	}
	return &UnknownOutcomeError{Name: string(b)}
}

// UnknownOutcomeError reports an outcome name this version does not know.
type UnknownOutcomeError struct{ Name string }

func (e *UnknownOutcomeError) Error() string { return "history: unknown outcome " + e.Name }

// WriteState says what became of the write a purchase sent to the store.
type WriteState uint8

// The states of a purchase's write.
const (
	// NoWrite means no write was sent.
	NoWrite WriteState = iota
	// Applied means the store acknowledged the write.
	Applied
	// Refused means the store answered that it did not apply the write
	// (a fenced write with a stale token).
	Refused
	// Indeterminate means the write was sent and no answer came: it may
	// have been applied at any time after it was sent.
	Indeterminate
)

var writeNames = [...]string{"none", "applied", "refused", "indeterminate"}

// String returns the write state's name as it appears in JSON.
func (w WriteState) String() string {
	if int(w) < len(writeNames) {
		return writeNames[w]
	}
	return "invalid"
}

// MarshalText encodes the write state by name.
func (w WriteState) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

// UnmarshalText decodes a write state name.
func (w *WriteState) UnmarshalText(b []byte) error {
	for i, n := range writeNames {
		if n == string(b) {
			*w = WriteState(i)
			return nil
		}
	}
	return &UnknownOutcomeError{Name: string(b)}
}

// NoStock marks an Op that never read the stock.
const NoStock int64 = math.MinInt64

// Op is one purchase attempt: a buyer arriving, taking the lock, reading
// the stock, writing stock-1 and its order, releasing the lock, answering.
// Instants that did not happen are zero.
type Op struct {
	// Client is the buyer's index; it is also the buyer's user id.
	Client int32 `json:"client"`
	// Attempt counts this buyer's attempts from zero.
	Attempt int16 `json:"attempt"`
	// Node is the simulated service instance that served the attempt.
	Node int16 `json:"node"`
	// Item is the product the attempt bought or read, counted from zero
	// (with --items above 1; zero, and left out, otherwise). A cart of
	// several items is one Op per item, sharing client and attempt.
	Item int32 `json:"item,omitempty"`

	// Arrival is when the attempt was scheduled to arrive; latency counts
	// from here so that queueing in front of a busy node is not hidden.
	Arrival int64 `json:"arrival"`
	// Start is when a worker of the node picked the attempt up.
	Start int64 `json:"start,omitempty"`
	// AcquireCall and Acquired bound the lock acquisition (Acquired is zero
	// when the lock was not obtained).
	AcquireCall int64 `json:"acquire_call,omitempty"`
	Acquired    int64 `json:"acquired,omitempty"`
	// ReadCall is when the stock read was sent; ReadReturn when it answered.
	ReadCall   int64 `json:"read_call,omitempty"`
	ReadReturn int64 `json:"read_return,omitempty"`
	// WriteCall is when the write was sent; WriteReturn when it answered
	// (zero when the answer never came).
	WriteCall   int64 `json:"write_call,omitempty"`
	WriteReturn int64 `json:"write_return,omitempty"`
	// ReleaseCall and Released bound the lock release.
	ReleaseCall int64 `json:"release_call,omitempty"`
	Released    int64 `json:"released,omitempty"`
	// End is when the buyer got its answer (zero while Pending).
	End int64 `json:"end,omitempty"`
	// Crash is when a fault killed the client, if it did.
	Crash int64 `json:"crash,omitempty"`
	// GrantCall is when the try that won the lock was sent, as the lock
	// said (locks.Trace): its lease began no earlier. Zero when the lock
	// did not say; AcquireCall bounds it then.
	GrantCall int64 `json:"grant_call,omitempty"`
	// Lease is the lease the acquisition was granted, in nanoseconds, as
	// the lock declares it (its default or --ttl); zero when the lock did
	// not say, Header.Lease standing for it.
	Lease int64 `json:"lease_ns,omitempty"`
	// ServerLease is the lease the server holds, as the lock read or set
	// it there, in nanoseconds; zero when the lock did not say. A lock
	// whose server lease is shorter than Lease is judged by the shorter.
	ServerLease int64 `json:"server_lease_ns,omitempty"`
	// Renewals are the lease's renewals the lock reported while the
	// attempt held it, in the order they were sent.
	Renewals []Renewal `json:"renewals,omitempty"`

	// Stock is the stock the attempt read, or NoStock.
	Stock int64 `json:"stock"`
	// Token is the fencing token the lock handed out, zero when none.
	Token uint64 `json:"token,omitempty"`
	// Shared is true when the attempt held the lock shared (a read lock,
	// with --reads on rw): shared holders may overlap one another, never
	// an exclusive one.
	Shared bool `json:"shared,omitempty"`
	// Lost is true when the release found the lock no longer held by this
	// attempt: its lease had lapsed or someone had deleted it.
	Lost bool `json:"lost,omitempty"`
	// Write says what became of the write.
	Write WriteState `json:"write"`
	// Outcome is what the buyer was answered.
	Outcome Outcome `json:"outcome"`
}

// Renewal is one renewal of a held lease: when it was sent, when it was
// answered (zero when it never was) and whether the server extended the
// lease.
type Renewal struct {
	Call   int64 `json:"call"`
	Return int64 `json:"return,omitempty"`
	OK     bool  `json:"ok,omitempty"`
}

// LeaseOf is the lease op was granted, in nanoseconds: the shorter of the
// declared and the server's, where the lock said them, else the header's
// lease; zero when nothing says.
func (h *Header) LeaseOf(op *Op) int64 {
	l := op.Lease
	if l <= 0 {
		l = h.Lease
	}
	if op.ServerLease > 0 && (l <= 0 || op.ServerLease < l) {
		l = op.ServerLease
	}
	return max(0, l)
}

// Holds reports whether the attempt held the lock at some point.
func (o *Op) Holds() bool { return o.Acquired > 0 }

// HoldEnd is when the attempt stopped holding the lock as far as it knew:
// when it began to release, when it crashed, or, for an attempt cut off by
// the end of the run, end (the run's last instant).
func (o *Op) HoldEnd(end int64) int64 {
	switch {
	case o.ReleaseCall > 0:
		return o.ReleaseCall
	case o.Crash > 0:
		return o.Crash
	}
	return end
}

// ItemCount is how many items the sale had: Items, or one.
func (h *Header) ItemCount() int { return max(1, h.Items) }

// Read reports whether the attempt read the stock.
func (o *Op) Read() bool { return o.Stock != NoStock }

// Fault is one injection of a fault, kept next to the operations so that a
// violation can be read beside the fault that caused it.
type Fault struct {
	// Name is the fault's name, as given to --faults.
	Name string `json:"name"`
	// Node is the node the fault struck, or -1 when it struck the server.
	Node int `json:"node"`
	// Client is the client the fault struck, or -1.
	Client int32 `json:"client"`
	// Start and End bound the injection; End is zero for a permanent one
	// (a crash).
	Start int64 `json:"start"`
	End   int64 `json:"end,omitempty"`
	// Params are the parameters in force, as "key=value" pairs.
	Params string `json:"params,omitempty"`
}

// Final is the state of the store found after the run.
type Final struct {
	// Stock is the inventory counter's final value.
	Stock int64 `json:"stock"`
	// Orders is the number of orders the store recorded.
	Orders int64 `json:"orders"`
	// DuplicateUsers lists the users with more than one order.
	DuplicateUsers []int32 `json:"duplicate_users,omitempty"`
	// DuplicateOrders counts orders beyond the first, over all users.
	DuplicateOrders int64 `json:"duplicate_orders"`
	// Ordered lists the users with at least one order, sorted, where the
	// store's audit lists them (a service under test's state does); nil
	// where it does not. The checker then checks every buyer told "sold"
	// against it, one by one.
	Ordered []int32 `json:"ordered,omitempty"`
	// Unknown is true when the state could not be read after the run (the
	// server was lost): the fields above are then zero, not measured.
	Unknown bool `json:"unknown,omitempty"`
	// Items is each item's own final state, in item order, when the sale
	// had several (Header.Items); the fields above then add them up (the
	// users listed once each).
	Items []Final `json:"items,omitempty"`
}

// Header describes the run a history belongs to.
type Header struct {
	// Schema is the history format's version.
	Schema int `json:"schema"`
	// Impl is the lock implementation that guarded the sale.
	Impl string `json:"impl"`
	// Lockless is true for implementations without a lock (none, atomic):
	// their operations have no critical section to audit.
	Lockless bool `json:"lockless,omitempty"`
	// Fenced is true when the store checks fencing tokens: then lock
	// overlaps are reported but do not decide data safety.
	Fenced bool `json:"fenced,omitempty"`
	// Unread is true when the operations do not say which stock they
	// read (a service under test that does not report it): the
	// inventory cannot be checked for linearizability, only audited.
	Unread bool `json:"unread,omitempty"`
	// Backend names the server that held the inventory.
	Backend string `json:"backend"`
	// Nodes, Clients, Stock, Attempts describe the workload.
	Nodes    int   `json:"nodes"`
	Clients  int   `json:"clients"`
	Stock    int64 `json:"stock"`
	Attempts int   `json:"attempts"`
	// Items is how many products were on sale, each with Stock units and
	// its own counter, orders and lock; zero or one means one.
	Items int `json:"items,omitempty"`
	// Cart is the most items one buyer's cart took (all or none).
	Cart int `json:"cart,omitempty"`
	// Reads is the percentage of buyers who only read an item's stock.
	Reads int `json:"reads,omitempty"`
	// Duration is the run's length in nanoseconds (its last instant).
	Duration int64 `json:"duration"`
	// CutShort is true when --timeout or an interrupt ended the run.
	CutShort bool `json:"cut_short,omitempty"`
	// CutBy says what cut the run short; empty when it was not.
	CutBy Cut `json:"cut_by,omitempty"`
	// Commands counts the server commands the buyers sent.
	Commands int64 `json:"commands"`
	// ClockError bounds, in nanoseconds, how far any recorded instant of
	// an operation may be from the true one on the run's timeline: the
	// error ε of the clock offsets that mapped the nodes' timestamps onto
	// the coordinator's (half the best round trip of the offset's
	// measurement, plus the drift allowance). Zero means every timestamp
	// came from one clock and is exact; histories written before the field
	// existed read so. Arrivals, fault windows and Duration are the
	// coordinator's own and carry no such error. The checker judges such a
	// history with every call ε earlier and every return ε later, so that
	// a clock error within ε never shows as a violation (see checker.Check).
	ClockError int64 `json:"clock_error_ns,omitempty"`
	// ClockMeasured is how much of ClockError the run measured itself, of
	// its nodes' clocks, rather than took as a floor from --clock-error:
	// zero when every timestamp came from one clock. A history read from
	// a file whose ClockError is larger is refused unless the reader
	// allows as much (see CheckClock): a clock error widens every interval,
	// and a widened history can pass where the recorded one fails.
	ClockMeasured int64 `json:"clock_measured_ns,omitempty"`
	// Lease is the lock's lease in nanoseconds (the --ttl given, or the
	// implementation's default); zero for a sale without a lease. The
	// harness's health is judged against it: a stall comparable to a
	// lease or its renewal interval can lapse a lease by itself.
	Lease int64 `json:"lease_ns,omitempty"`
	// Rate is the open arrival model's buyers per second (--rate); zero
	// for a ramp.
	Rate float64 `json:"rate,omitempty"`
	// Health is what the harness measured of itself while the sale ran;
	// nil in histories written before it was measured.
	Health *Health `json:"health,omitempty"`
	// Promises are what the lock promised, which the checker holds it
	// to; nil in histories written before schema 3, and for a sale
	// without a lock.
	Promises *Promises `json:"promises,omitempty"`
}

// Promises are what a lock promises its holders, as the run recorded
// them: the checker fails a history that breaks one (see the checker's
// overlap causes, token and fairness checks).
type Promises struct {
	// Exclusion: no second holder is granted the lock while a holder's
	// lease is live on the server (acquired or renewed less than a lease
	// ago). Every lock promises it.
	Exclusion bool `json:"exclusion,omitempty"`
	// Renewal: the lease is renewed while its holder runs, so that it
	// runs out only when the holder is paused, stalled or cut off.
	Renewal bool `json:"renewal,omitempty"`
	// Tokens: every lease carries a fencing token, unique and higher
	// than every token granted before it. A fenced lock promises it.
	Tokens bool `json:"tokens,omitempty"`
	// FIFO: the lock is granted in the order it was asked for.
	FIFO bool `json:"fifo,omitempty"`
	// Validity: a lease is handed out only while still valid, the
	// acquisition's time taken from it (Redlock), so that no holder
	// enters after its try's lease ran out.
	Validity bool `json:"validity,omitempty"`
}

// Health is how well the harness itself ran: whether it could drive the
// workload at the speed the workload asks, or was starved of CPU, stalled
// or fell behind its arrival schedule. A starved harness can make a
// correct lock look slow or stuck, and a lease lapse that no fault caused;
// the checker judges liveness and performance only when the harness was
// healthy (see checker's saturation). Every duration is in nanoseconds.
//
// The figures of a run whose nodes ran in processes of their own are the
// worst of the coordinator's and every node's, each of which is also in
// Nodes, with the spans its coordinator stopped it taken out (Discount).
type Health struct {
	// Node is the node whose health this is; -1 for the process that ran
	// the sale (the coordinator, or every node when they are goroutines).
	Node int `json:"node"`
	// Elapsed is how long the health was monitored.
	Elapsed int64 `json:"elapsed_ns"`
	// CPUs is how many cores the process could use (GOMAXPROCS; the most
	// it had, for a node process or the coordinator of node processes,
	// which run on their share of the CPUs while the machine is quiet).
	CPUs int `json:"cpus"`
	// CPUUse is the process's CPU time over the monitored wall time times
	// the cores it could use (on average): 1 is every one busy the whole
	// time.
	CPUUse float64 `json:"cpu_use"`
	// CPUWait is the share of the time the process's threads were ready
	// to run that the kernel kept them waiting for a core (the run delay
	// of /proc/self/task/*/schedstat over run time plus run delay). It
	// counts the process's threads waiting for each other too: a busy
	// harness on a quiet machine of two cores shows 0.4-0.6. -1 where the
	// kernel does not say.
	CPUWait float64 `json:"cpu_wait"`
	// Cores is how many cores the machine lets the process run on.
	Cores int `json:"cores,omitempty"`
	// Others is how many tasks of other processes were ready to run at
	// once, on average over the run (the kernel's procs_running, less the
	// running threads of the process and of the run's node processes on
	// the machine, sampled every 50 ms): the machine's demand besides
	// lockbench. From Cores up, other processes alone could keep every
	// core busy, and lockbench got at most about half of the CPU it asked
	// for. -1 where the kernel does not say, and for a node process,
	// which leaves the figure to its coordinator.
	Others float64 `json:"others"`
	// StallMax is the longest a timer that should fire every few
	// milliseconds woke late: how long the whole process, or its
	// scheduler, stood still at once.
	StallMax int64 `json:"stall_max_ns"`
	// StallP99 is the 99th percentile of the same lateness.
	StallP99 int64 `json:"stall_p99_ns"`
	// SchedP99 and SchedMax are the Go scheduler's latency (the time a
	// goroutine waited to run once ready, runtime/metrics
	// /sched/latencies:seconds), the 99th percentile and the largest
	// bucket seen, over the run.
	SchedP99 int64 `json:"sched_latency_p99_ns"`
	SchedMax int64 `json:"sched_latency_max_ns"`
	// GCPauseMax is the longest stop-the-world pause of the garbage
	// collector (the upper bound of its histogram bucket), and GCPauseTotal
	// all of them together.
	GCPauseMax   int64 `json:"gc_pause_max_ns"`
	GCPauseTotal int64 `json:"gc_pause_total_ns"`
	// LagP99 and LagMax are how late the harness handed buyers to their
	// nodes behind their scheduled arrivals (not the lock's queueing: the
	// harness's own lateness in keeping the schedule): the coordinator's,
	// or a node's that keeps its buyers' schedule itself.
	LagP99 int64 `json:"arrival_lag_p99_ns"`
	LagMax int64 `json:"arrival_lag_max_ns"`
	// ServerPingMax is the longest round trip of the run's watch to the
	// embedded server, which runs inside this process: its slowness is
	// the process's own. Zero for other servers.
	ServerPingMax int64 `json:"server_ping_max_ns,omitempty"`
	// ServerClockStepMax is the longest step of the embedded server's
	// clock (servers.SteppedClock): a lease set on it may have run out
	// that much before its time. Zero for other servers.
	ServerClockStepMax int64 `json:"server_clock_step_max_ns,omitempty"`
	// Starved are the spans of the run (ns since its start) in which the
	// harness stood still for StarvedAt or longer at once.
	Starved []Span `json:"starved,omitempty"`
	// Nodes holds each node process's own health, when the nodes ran in
	// processes (or containers) of their own.
	Nodes []Health `json:"nodes,omitempty"`
}

// StarvedAt is the stall from which a span of the run is listed in
// Health.Starved: longer than any scheduler slice or GC pause of a healthy
// process, short enough to show a starved one.
const StarvedAt = 50 * time.Millisecond

// Span is a stretch of the run, in nanoseconds since its start.
type Span struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// LeaseSlack is how far the harness's own hold-ups may have moved a
// lease's timing at once: the longest it stood still (its stall timer,
// the Go scheduler), or the longest step of the embedded server's clock,
// by which a lease on it may run out early. A holder's timing is judged
// on its lease only beyond it.
func (h *Health) LeaseSlack() int64 {
	return max(h.StallMax, h.SchedMax, h.ServerClockStepMax)
}

// Merge folds o, a node's health, into h: h's figures become the worst of
// both, its starved spans the union, and o is listed in h.Nodes.
func (h *Health) Merge(o Health) {
	h.CPUWait = max(h.CPUWait, o.CPUWait)
	h.Others = max(h.Others, o.Others)
	h.StallMax = max(h.StallMax, o.StallMax)
	h.StallP99 = max(h.StallP99, o.StallP99)
	h.SchedP99 = max(h.SchedP99, o.SchedP99)
	h.SchedMax = max(h.SchedMax, o.SchedMax)
	h.GCPauseMax = max(h.GCPauseMax, o.GCPauseMax)
	h.GCPauseTotal = max(h.GCPauseTotal, o.GCPauseTotal)
	h.LagP99 = max(h.LagP99, o.LagP99)
	h.LagMax = max(h.LagMax, o.LagMax)
	h.ServerPingMax = max(h.ServerPingMax, o.ServerPingMax)
	h.ServerClockStepMax = max(h.ServerClockStepMax, o.ServerClockStepMax)
	h.Starved = append(h.Starved, o.Starved...)
	slices.SortFunc(h.Starved, func(a, b Span) int { return cmp.Compare(a.From, b.From) })
	o.Nodes = nil
	h.Nodes = append(h.Nodes, o)
}

// SchemaVersion is the version of the history format written by this
// build: 3 adds the records' digest to the trailer (Trailer.SHA256), the
// clock error the run measured (Header.ClockMeasured), the lease of each
// acquisition (grant_call, lease_ns, server_lease_ns, renewals) and the
// lock's promises.
const SchemaVersion = 3

// OldestSchema is the oldest history format this build reads: schema 2,
// whose trailer has no digest (its integrity cannot be checked), whose
// header does not say what clock error its run measured, and whose
// acquisitions carry no lease.
const OldestSchema = 2

// legacySchema is the version before SchemaVersion, still read.
const legacySchema = OldestSchema

// History is everything recorded of one implementation's run.
type History struct {
	Header Header
	Final  Final
	Faults []Fault
	Ops    []Op
}

// Cut is what ended a run before every buyer was done.
type Cut string

// What can cut a run short.
const (
	// CutTimeout: the sale's --timeout ran out with buyers still waiting,
	// a liveness failure (a deadlock, a lock nobody can take).
	CutTimeout Cut = "timeout"
	// CutInterrupt: the user stopped the run (Ctrl-C); what was recorded
	// is judged, but not whether the buyers would have been served.
	CutInterrupt Cut = "interrupt"
	// CutServerLost: the inventory's server stopped answering; what was
	// recorded is judged, but not whether the buyers would have been
	// served.
	CutServerLost Cut = "server lost"
)
