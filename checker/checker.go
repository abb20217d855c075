// Package checker judges a recorded history: data safety (a
// linearizability check of the inventory, decided from the stock each
// sale read in O(n log n), with porcupine naming and drawing the first
// illegal segment; and an oversell audit), lock
// safety (critical sections of different owners that overlap in time) and
// liveness (units left unsold while buyers gave up, runs cut short).
//
// A history recorded by nodes on clocks of their own declares how far its
// instants may be off (history.Header.ClockError, ε); the checks judge it
// with every call ε earlier and every return ε later, so that a clock
// error within ε is never a violation (see widen).
//
// The checker reads histories only; it knows nothing of Redis or of the
// lock implementations. Verdicts are values: a failed check is a Report
// with Pass false and its reasons, never an error.
package checker

import (
	"time"

	"github.com/lockbench/lockbench/history"
)

// Status is the outcome of one check.
type Status string

// The statuses a check can end in.
const (
	// OK means the check found nothing wrong.
	OK Status = "ok"
	// Illegal means the linearizability check proved a violation.
	Illegal Status = "illegal"
	// Unknown means the check could not decide (it timed out); never a pass.
	Unknown Status = "unknown"
	// Violated means a safety or liveness property was broken.
	Violated Status = "violated"
	// Inconclusive means the property could not be judged: liveness
	// did not hold while the harness itself was saturated (see
	// Report.Saturation), so the buyers may have waited for a CPU rather
	// than for the lock.
	Inconclusive Status = "inconclusive"
	// NotApplicable means the property does not apply (lock safety of an
	// implementation without a lock).
	NotApplicable Status = "n/a"
)

// Options tune a check. The zero value uses the documented defaults.
type Options struct {
	// Timeout bounds the linearizability search; default 10s. A search
	// that runs out is reported as Unknown.
	Timeout time.Duration
	// MaxPairs is how many overlapping pairs to name; default 5.
	MaxPairs int
}

// OpRef names one operation of a history.
type OpRef struct {
	// Index is the operation's position in History.Ops.
	Index   int   `json:"index"`
	Client  int32 `json:"client"`
	Attempt int16 `json:"attempt"`
	Node    int16 `json:"node"`
	// From and To bound the critical section (ns since the run's start).
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Overlap is a pair of critical sections of different owners that
// overlapped in time; B started while A still held the lock.
type Overlap struct {
	A OpRef `json:"a"`
	B OpRef `json:"b"`
	// Duration is how long both held the lock at once, in nanoseconds.
	Duration int64 `json:"duration"`
	// Cause is why they overlapped (see Cause).
	Cause Cause `json:"cause"`
	// Fault names the fault that removed the lock, when Cause is
	// CauseFault.
	Fault string `json:"fault,omitempty"`
}

// TokenClash is two holders whose fencing tokens break the promise of
// unique, increasing tokens: the same token, or B's lower than A's
// although A had its token before B asked.
type TokenClash struct {
	A      OpRef  `json:"a"`
	B      OpRef  `json:"b"`
	TokenA uint64 `json:"token_a"`
	TokenB uint64 `json:"token_b"`
}

// Linearizability is the result of the porcupine check of the inventory.
type Linearizability struct {
	Status Status `json:"linearizability"`
	// Ops is how many operations were checked: those that read the stock,
	// and the atomic implementation's scripts that got no answer (blind
	// sales, which may have taken a unit at any later time, or not).
	Ops int `json:"linearizability_ops"`
	// Segments is how many pieces the history was split into at quiescent
	// points.
	Segments int `json:"linearizability_segments"`
	// FirstIllegal bounds the first segment found illegal (ns), if any.
	FirstIllegal *Window `json:"first_illegal,omitempty"`
	// Elapsed is how long the check took, in nanoseconds.
	Elapsed int64 `json:"linearizability_elapsed_ns"`
}

// Window is a span of the run, in nanoseconds since its start.
type Window struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Data is the data-safety part of a report.
type Data struct {
	Status Status `json:"data_safety"`
	// Linearizability is embedded so that its status and first illegal
	// segment sit beside the data's own figures in JSON.
	Linearizability
	// Sold counts attempts that told their buyer the unit was theirs.
	Sold int64 `json:"sold"`
	// Orders is the number of orders the store recorded.
	Orders int64 `json:"orders"`
	// Oversold counts orders not backed by stock: orders beyond what the
	// counter lost (initial stock minus final stock), or beyond the stock,
	// or sales confirmed to their buyers beyond the stock (counted even
	// when the final state could not be read).
	Oversold int64 `json:"oversold"`
	// LostOrders counts sales confirmed to their buyer whose order the
	// store no longer holds (a server restarted without persistence).
	LostOrders int64 `json:"lost_orders"`
	// Unordered counts buyers told "sold" of whom the store's final state
	// holds no order, checked buyer by buyer where the state lists the
	// users with an order (history.Final.Ordered), whatever the unknown
	// outcomes: an order that landed for another buyer does not stand in
	// for a lost one, as it does in LostOrders' count.
	Unordered int64 `json:"unordered,omitempty"`
	// UnorderedBuyers names the first of them, in the history's order
	// (at most MaxNamed).
	UnorderedBuyers []int32 `json:"unordered_buyers,omitempty"`
	// DuplicateOrders counts orders beyond a user's first.
	DuplicateOrders int64 `json:"duplicate_orders"`
	// DuplicateSales counts users whose purchase the history shows applied
	// more than once while the store's final state shows them with one
	// order: a duplicate, or an order the store lost.
	DuplicateSales int64 `json:"duplicate_sales"`
	// Mismatched counts answers that contradict the stock their attempt
	// read: a unit sold after a read of zero or less, or "sold out" told
	// after a read of a unit or more.
	Mismatched int64 `json:"mismatched"`
	// FirstMismatch names the first such answer.
	FirstMismatch *OpRef `json:"first_mismatch,omitempty"`
	// BrokenCarts counts carts (a buyer's attempt at several items) that
	// were not all or none: some items sold and others not, or refused
	// while every item had stock and no order of the buyer.
	BrokenCarts int `json:"broken_carts,omitempty"`
	// NegativeStock is true when the counter went below zero.
	NegativeStock bool `json:"negative_stock,omitempty"`
	// FinalStock is the counter's value after the run.
	FinalStock int64 `json:"final_stock"`
	// FinalUnknown is true when the store's state could not be read after
	// the run (the server was lost): orders and stock were not audited.
	FinalUnknown bool `json:"final_unknown,omitempty"`
	// Indeterminate counts attempts whose write outcome is unknown.
	Indeterminate int `json:"indeterminate"`
}

// Lock is the lock-safety part of a report.
type Lock struct {
	Status Status `json:"lock_safety"`
	// Fencing is true when the store checked fencing tokens (the history's
	// header says so): the overlaps are then reported in the notes and do
	// not fail the run, the data checks deciding safety.
	Fencing bool `json:"fencing,omitempty"`
	// Overlaps counts critical sections that began while a different
	// owner still held the lock.
	Overlaps int `json:"lock_overlaps"`
	// Pairs names the first few overlaps.
	Pairs []Overlap `json:"overlap_pairs"`
	// Causes counts the overlaps by cause; omitted when there are none.
	Causes map[Cause]int `json:"overlap_causes,omitempty"`
	// Broken counts the overlaps that break the lock's promise whatever
	// the store's fencing: granted during a live lease, or a lease that
	// ran out while its holder ran when the lock promises renewal. They
	// fail the run, fenced or not.
	Broken int `json:"broken_overlaps,omitempty"`
	// FirstBroken names the first of them.
	FirstBroken *Overlap `json:"first_broken,omitempty"`
	// TokenClashes counts the pairs of holders of a lock that promises
	// fencing tokens (a fenced one) whose tokens were the same, or lower
	// than one granted before: each fails the run.
	TokenClashes int `json:"token_clashes,omitempty"`
	// FirstClash names the first of them.
	FirstClash *TokenClash `json:"first_token_clash,omitempty"`
	// FIFO is true when the lock promises first-come order and the run
	// could judge it (no fault struck it): its overtakes then fail it.
	FIFO bool `json:"fifo,omitempty"`
	// Lost counts releases that found the lock no longer held by the
	// attempt (its lease had lapsed or someone had deleted it): that
	// holder had no mutual exclusion for part of its critical section.
	// Reported, never failing on its own: a lease may lapse after the last
	// write, and the overlaps and the data decide.
	Lost int `json:"lost_releases"`
	// Overtakes counts the acquisitions that went ahead of a buyer who
	// had asked for the lock more than FairnessMargin earlier and was
	// still waiting: how far the lock is from granting in arrival order.
	// With a clock error ε, both the asks and the grants must be more
	// than 2ε further apart (see checkFairness).
	Overtakes int64 `json:"overtakes"`
	// FirstOvertake names the first of them.
	FirstOvertake *Overtake `json:"first_overtake,omitempty"`
}

// Liveness is the liveness part of a report.
type Liveness struct {
	Status Status `json:"liveness"`
	// Unsold is the stock left when buyers were sent away (zero otherwise).
	Unsold int64 `json:"unsold"`
	// GaveUp counts buyers whose last attempt ended without an answer on
	// the stock: gave up, failed before writing, or still pending (crashed
	// buyers aside).
	GaveUp int `json:"gave_up"`
	// Unanswered counts buyers whose last attempt's request failed
	// without an answer after it was sent (an unknown outcome: a timeout,
	// a service's 5xx): neither sent away nor served as far as anyone
	// knows, and never counted against liveness.
	Unanswered int `json:"unanswered,omitempty"`
	// Refused counts writes the store refused with no newer fencing token
	// taken before the refusal: the only legitimate refusal is of a stale
	// holder, after a newer one took the lock.
	Refused int `json:"refused"`
	// FirstRefused names the first such refusal.
	FirstRefused *OpRef `json:"first_refused,omitempty"`
	// Unfenced counts the refusals, among Refused, of a store whose lock
	// is declared unfenced: the store fenced a lock that says it is not.
	Unfenced int `json:"refused_unfenced,omitempty"`
	// Fenced counts the legitimate refusals: stale holders' writes,
	// refused after a newer token was taken.
	Fenced int `json:"fenced,omitempty"`
	// SentAway counts buyers whose last attempt left them without a unit
	// while the sale may have had one: they gave up, their write was
	// refused with no newer token about, or they were told "sold out"
	// after reading a unit.
	SentAway int `json:"sent_away"`

	// firstFenced is the first legitimate refusal, for the report's note.
	firstFenced fencedBy
	// CutShort is true when --timeout or an interrupt ended the run.
	CutShort bool `json:"cut_short"`
	// CutBy says what cut the run short (timeout, interrupt); empty when
	// nothing did, or the history does not say.
	CutBy history.Cut `json:"cut_by,omitempty"`
}

// fencedBy is a refused write (its operation's index) and the newer token
// taken before it, and when.
type fencedBy struct {
	op    int
	token uint64
	at    int64
}

// Report is the checker's verdict on one history.
//
// The JSON keys of its parts are the keys of a run in result.json, which
// embeds Data, Lock and Liveness side by side (and Data embeds
// Linearizability): each key names its check, so the statuses are
// data_safety, lock_safety, liveness and linearizability rather than one
// "status" each, and no two parts share a key.
type Report struct {
	Data     Data     `json:"data"`
	Lock     Lock     `json:"lock"`
	Liveness Liveness `json:"liveness"`
	// Pass is true when data safety and liveness hold, and lock safety
	// holds for implementations whose safety rests on the lock (a fenced
	// implementation's overlaps are reported in Notes instead).
	Pass bool `json:"pass"`
	// Reasons say why the verdict is fail, one sentence each.
	Reasons []string `json:"reasons,omitempty"`
	// Notes say what is worth knowing but does not fail the run.
	Notes []string `json:"notes,omitempty"`
	// Saturation says how the harness was saturated beyond what the
	// workload tolerates (starved of CPU, stalled for a third of the
	// lease, late on its arrival schedule), one sentence each with its
	// measurement and bound; empty when it was healthy. A saturated run's
	// performance figures are not the lock's, and its liveness findings
	// go to Unjudged.
	Saturation []string `json:"saturation,omitempty"`
	// Unjudged are the liveness findings set aside because the harness
	// was saturated: neither a pass nor a failure.
	Unjudged []string `json:"unjudged,omitempty"`
	// Inconclusive is true when nothing failed but liveness could not be
	// judged (Unjudged): the verdict is neither pass nor fail.
	Inconclusive bool `json:"inconclusive,omitempty"`
	// Interrupted is true when the run was cut short by something other
	// than the lock: an interrupt (Ctrl-C) or a server lost during the
	// sale (Liveness.CutBy). What was recorded is judged for safety;
	// liveness is not, and a note says why. With no reason to fail, the
	// verdict is neither pass nor fail but interrupted.
	Interrupted bool `json:"interrupted,omitempty"`
	// ClockError is the history's clock error ε in nanoseconds
	// (history.Header.ClockError), zero when every timestamp came from
	// one clock. It is the checks' blind spot: they judged every call ε
	// earlier and every return ε later, so two critical sections overlap
	// only when they did by more than 2ε, and an order of operations is
	// a violation only when more than 2ε separates it from a legal one.
	// The instants the report names (sections, windows, overtakes) are
	// then on that widened timeline, and an overlap's Duration is the
	// part beyond the blind spot.
	ClockError int64 `json:"clock_error_ns,omitempty"`
}
