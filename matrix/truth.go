package matrix

import (
	"fmt"
	"slices"
	"time"
)

// Expect is what one cell of the truth table must show: for each of lock
// safety, data safety and liveness, whether it must be violated, must hold,
// or may go either way.
type Expect struct {
	// Label is the catalog's wording (docs/catalog.md): safe, overlap,
	// oversell, deadlock...
	Label string
	// Lock, Data and Live are Must (violated), MustNot (holds) or Either.
	Lock, Data, Live Want
	// Sometimes marks a failure that shows in most runs, not in every
	// one: a race no fault drives, or one a fault makes possible but the
	// order of the lock's queue decides. One run that stays clean does not
	// contradict the cell; a series of seeds must show it at least once.
	Sometimes bool
}

// Want says whether a property must be violated.
type Want int

// The wants of a property.
const (
	Either  Want = iota // no expectation
	Must                // must be violated
	MustNot             // must hold
)

// The expectations the catalog's cells use.
var (
	// Safe: no overlap, data linearizable, every unit sold.
	Safe = Expect{Label: "safe", Lock: MustNot, Data: MustNot, Live: MustNot}
	// Overlap: two holders at once; whether it turns into an oversell
	// depends on timing.
	Overlap = Expect{Label: "overlap", Lock: Must}
	// OverlapOversell: two holders at once and the inventory corrupted.
	OverlapOversell = Expect{Label: "overlap, oversell", Lock: Must, Data: Must}
	// Oversell: the inventory corrupted (no lock, or a lock that does not
	// span nodes).
	Oversell = Expect{Label: "oversell", Data: Must}
	// Deadlock: units left unsold because a lock is never freed; nothing
	// unsafe happens.
	Deadlock = Expect{Label: "deadlock", Lock: MustNot, Data: MustNot, Live: Must}
	// Racy: an implementation that is unsafe with no fault at all, through
	// a race that shows in most runs but not in every one.
	Racy = Expect{Label: "overlap (racy)", Lock: Must, Sometimes: true}
	// OverlapMostRuns: two holders at once under the cell's fault in most
	// runs, not in every one (the fault meets a holder by timing).
	OverlapMostRuns = Expect{Label: "overlap (most runs)", Lock: Must, Sometimes: true}
	// DataSafe: the data stays safe whatever the lock does (fenced:
	// overlaps are reported, stale writes refused; buyers whose commands
	// were lost may give up).
	DataSafe = Expect{Label: "data safe", Data: MustNot}
	// NoOverlap: one holder at a time and the data safe, while buyers
	// whose commands a fault lost may give up (a failover stops the
	// primary for a second or two).
	NoOverlap = Expect{Label: "no overlap", Lock: MustNot, Data: MustNot}
	// FailoverOverlap: two holders at once in most runs of a failover,
	// not in every one (see failoverWhy).
	FailoverOverlap = Expect{Label: "overlap", Lock: Must, Sometimes: true}
)

// Cell is one cell of the truth table: an implementation, a fault (empty
// for none) and, where it matters, a node count.
type Cell struct {
	Impl  string
	Fault string
	Nodes int // 0: the matrix's default
	// Burst makes every buyer arrive at once: a race with no lock to
	// break needs buyers at the same instant, which the matrix's gentle
	// ramp does not always give.
	Burst bool
	// TTL, when set, is the cell's lease instead of the matrix's.
	TTL time.Duration
	// Timeout, when set, bounds the cell's sale instead of the matrix's
	// --timeout, when shorter: a deadlock shows as a sale cut short, and
	// waiting the matrix's 10 s for it per seed is time CI does not have.
	Timeout time.Duration
	// Items, Cart and Reads, when set, are the cell's --items, --cart and
	// --reads: several products, carts of several, product-page readers.
	Items, Cart, Reads int
	// Hold, when set, is the cell's --hold: a business step that long
	// inside every critical section, so that two that should exclude
	// each other last long enough to meet (a reader let in while a writer
	// holds).
	Hold time.Duration
	// Params are --faults parameters the cell's fault runs with, beyond
	// its defaults ("after=20ms"); the cell is still named by its fault,
	// unless Variant says otherwise.
	Params string
	// Variant, when set, tells the cell apart from another of the same
	// implementation and fault that runs with other parameters: the
	// parameters that differ ("at=acquiring"), which the name carries
	// after the fault ("redlock/pause-holder:at=acquiring"). Cells without
	// one keep the name of their fault alone.
	Variant string
	Want    Expect
	// Why explains a cell that departs from the catalog: the measured
	// truth, and the reason.
	Why string
}

// Entry is the cell's fault as a --faults entry, with its parameters.
func (c Cell) Entry() string {
	if c.Params == "" || c.Fault == "" {
		return c.Fault
	}
	return c.Fault + ":" + c.Params
}

// Name is the cell's name, "impl/fault" ("impl/none" without a fault),
// with its Variant after the fault when it has one
// ("impl/fault:variant").
func (c Cell) Name() string {
	f := c.Fault
	if f == "" {
		f = "none"
	}
	if c.Variant != "" {
		f += ":" + c.Variant
	}
	n := c.Impl + "/" + f
	if c.Nodes > 0 {
		n += "@" + string(rune('0'+c.Nodes)) + "nodes"
	}
	return n
}

// getsetWhy is the measured truth behind the getset cells that depart from
// the catalog.
const getsetWhy = "the catalog says safe; measured: source 002's RedisLock breaks with no fault at all. A waiter whose GET finds the key gone (the holder just deleted it) treats the missing value as an expired lock and goes on to GETSET, stealing the lock a third client has just taken with SETNX"

// pauseLease is the lease of the server-pause cells of lease locks: longer
// than the pause (1.5 x the matrix's 500 ms command timeout) plus a
// watchdog's renewal period, so that no lease can run out during it.
const pauseLease = 2 * time.Second

// serverPauseWhy says why the lease locks' server-pause cells run with a
// longer lease.
const serverPauseWhy = "with the pause shorter than the lease, the cell shows that timed-out commands with unknown outcomes raise no false alarm. A pause longer than the lease is a different, racy failure (measured: watchdog oversold in 1 of 20 seeds): the server's clock runs on, the lease is found expired when it answers again, and a second holder can read the stock before the first one's queued write lands"

// redlockLease is the lease of the redlock cells: every try goes to the
// servers one after another, and waiters load every server, so a
// critical section takes far longer than on one server.
const redlockLease = time.Second

// redlockLeaseWhy says why the redlock cells run with a longer lease.
const redlockLeaseWhy = "measured with the matrix's 200 ms lease: under the load of the truth-table test (cells in parallel, 2 shared cores) holders outlived the lease in 7 of 20 seeds and a second holder got in, on the embedded servers and on real redis-servers alike; redlock has no renewal, so its lease must cover the slowest critical section"

// redlockRestartWhy says how the restart cell of redlock is made to
// happen on demand.
const redlockRestartWhy = "Kleppmann's case, made to happen: node 0 is cut off from a minority of the servers for the whole sale, so its holders win a bare majority; one server of that majority (never the first, which holds the inventory) restarts empty under a holder, and another node wins a majority with it"

// redlockLinkWhy says what the redlock cells on node 0's links show.
const redlockLinkWhy = "not in the catalog; every one of the five servers is behind node 0's fault proxy, so the cut (or the delay) reaches each of its votes: a client of node 0 wins no majority while cut, and one whose votes took long has its validity shortened by the time taken. Measured (lockbench matrix --impl=redlock --seed=1..3, embedded servers, load 21-25): no overlap and no oversell in 3 of 3 seeds, and in 20 of 20 of the truth-table test on redis-servers (load 20-63); when redlock probed after every vote, one CI run (seed 11) showed 3 overlaps and 3 units oversold: the pause of a node whose client was only asking also stopped another client of that node inside its critical section, the lease's known limit, hence the probe after the majority only; the cut or slowed node's buyers may give up, and on a busy machine the sale may not finish within the matrix's 10 s (71 to 300 of 300 units sold), so liveness is not judged"

// redlockVotesWhy says what the redlock cell paused between votes shows.
const redlockVotesWhy = "not in the catalog; the pause strikes a client right after the vote that made its majority, with votes left (at=acquiring, every holder for a quarter of the sale's timeout, until the next holder has read): the votes it won expire during the pause, and redlock's validity (the lease less the time the votes took and the clock drift) comes out negative, so the paused client gives back what it won instead of entering. Measured (lockbench matrix --impl=redlock --seed=1..3, embedded servers, load 21-25): no overlap and no oversell in 3 of 3 seeds, and in 20 of 20 of the truth-table test on redis-servers (load 20-63); when redlock probed after every vote, one CI run (seed 11) showed 3 overlaps and 3 units oversold: the pause of a node whose client was only asking also stopped another client of that node inside its critical section, the lease's known limit, hence the probe after the majority only; buyers of the paused node may give up (20 to 300 of 300 units sold), so liveness is not judged"

// zkSession is the session timeout of the ZooKeeper cells: the matrix's
// 200 ms lease would make heartbeats every 67 ms, which a loaded machine
// misses, expiring sessions with no fault at all.
const zkSession = time.Second

// etcdSession is the session TTL of the etcd cells: etcd grants whole
// seconds, and at least 1.5 election timeouts (1.5 s on lockbench's
// cluster).
const etcdSession = 2 * time.Second

// etcdPauseWhy cites the finding the cell reproduces.
const etcdPauseWhy = "Jepsen's etcd 3.4.3 analysis (2020): a holder paused past its session's TTL stops keeping its lease alive, the lease expires, the next waiter holds, and the paused holder, resumed, writes on without knowing; Jepsen's advice, the lock key's revision as a fencing token, is etcd-fenced, and the store in etcd itself guarded by the key's revision is etcd-txn"

// rowLockPauseWhy says why a lock that lives as long as its transaction
// may leave units unsold under the default pause-holder.
const rowLockPauseWhy = "pause-holder strikes every holder for a quarter of the sale's timeout, and a paused holder keeps its transaction's lock (the row's, or the transaction's advisory lock) all the while: the others wait on it past their command timeout and give up, so units may stay unsold (14 of 300 in a CI run of pg-for-update, seed 11, 2026-11-26); no unit is sold twice"

// etcdClockWhy says why a skewed clock does not reach the etcd lock.
const etcdClockWhy = "an etcd lease is timed by the cluster's leader alone: a client's clock, skewed or not, never decides whether a lock is held"

// etcdServerWhy says why the etcd server cells are safe.
const etcdServerWhy = "the fault strikes the leader of lockbench's three members (SIGSTOP; SIGKILL and a start on its data): the others elect a leader and serve on, leases are renewed on a leader change, and buyers whose requests were lost with the member may give up"

// etcdQuorumWhy says why losing the quorum breaks nothing.
const etcdQuorumWhy = "two of lockbench's three members, the leader among them, stop (SIGSTOP) past the session's TTL: the one left elects no leader and commits nothing, so no lease expires, no lock is granted and no sale commits until they resume, when a new leader renews every lease; only liveness suffers (buyers may give up)"

// pgIdle is pg-advisory's lease in the matrix: its lock sessions'
// idle_session_timeout.
const pgIdle = time.Second

// pgAdvisoryWhy is what ends a session-level lock early.
const pgAdvisoryWhy = "a session-level advisory lock has no lease of its own, but a server-side idle_session_timeout (the cell's --ttl) ends a holder's lock session that stays idle past it, which frees the lock, while the paused holder goes on writing through its data connection: two holders at once in every run; an oversell only when the paused holder's stale write lands after another's sale, in most runs but not every one (seed 1 of 5 sold no unit twice in a CI run on a quiet machine, 2026-11-26), so the cell asks for the overlap alone"

// zk002PartitionWhy is source 002's swallowed exception.
const zk002PartitionWhy = "not in the catalog: source 002's lock() catches the exception a lost connection raises and returns, so the cut node's buyers enter without the lock while another node holds it"

// zkCrashAfter arms the ZooKeeper cells' crash early: their buyers all
// arrive at once, and the lock can sell the stock within the default
// 100-200 ms, before the crash would come.
const zkCrashAfter = "after=20ms"

// zk002CrashWhy is source 002's missing re-check after a wake-up.
const zk002CrashWhy = "the catalog expects it to recover once the session expires, as zookeeper does; measured: the crashed node's session takes its waiters' nodes with the holder's when it expires, and each waiter of the other node whose predecessor was one of them enters at once, since the source never reads the children again after a wake-up: several holders at the same time. It takes a waiter of the other node queued behind a waiter of the crashed one, so the cell's buyers (and zookeeper's, which stays safe) all arrive at once: with the matrix's ramp the lock kept up with the arrivals, the queue held one or two when the crash came, and 0 of 6 seeds overlapped on a quiet machine (25 of 30 on a busier one); with the burst, 14 of 14"

// zkPartitionWhy says why a cut does not break the correct lock here.
const zkPartitionWhy = "not in the catalog; measured safe: the cut node's buyers fail instead of entering, and the cut holder's critical section ends (its write times out after the matrix's 500 ms command timeout) before its session expires (1 s). With a command timeout longer than the session timeout the holder would still be inside when the next one enters"

// The workloads of multi's and rw's cells: carts of one to two of three
// items for multi (its all-or-none is the point), and for rw two items
// with three buyers in ten reading the product page under the read lock.
const (
	multiItems, multiCart = 3, 2
	rwItems, rwReads      = 2, 30
)

// rwHold is the business step of rw's cells: a reader let in while a
// writer holds is seen only when the two critical sections meet, and
// without a business step a writer's is a few commands long. rw with one
// read in twenty let in without the lock, on the rw/none cell's sale
// (seeds 1-10, embedded server): caught in 8 of 10 seeds without it, in
// 10 of 10 with 1 ms (TestRWCellsReachAReaderSlip). The step has to grow
// as the server gets faster: with the embedded server's kept Lua state
// and socket pair (2026-11-26), one read in ten let in met a writer 1-7
// times a sale with 1 ms (seeds 1-20, quiet), and was missed in 2 of 10
// seeds in a CI run; 6-13 times with 3 ms (5-11 with 2 ms, 5-11 with
// 5 ms), where the slower server gave 1-10 with 1 ms.
const rwHold = 3 * time.Millisecond

// The measured truth of multi's and rw's cells that depart from
// watchdog's row (seeds 1-5 of lockbench matrix --impl=multi,rw, on the
// embedded server and on redis-server 7.0: ten runs a cell).
const (
	multiExpireWhy = "measured: 8 of 10 runs overlapped and oversold (1 to 3 units); seed 2 stayed clean on both servers. The fault deletes every item's lock, then keeps the holder inside until another client reaches its business step: with three items that client may hold another item's lock, and the holder then writes and leaves before anyone takes its own items"
	rwExpireWhy    = "measured: 2 of 10 runs overlapped (embedded seed 3, redis-server seed 1, 1 and 2 overlaps), 8 stayed clean. The fault keeps the holder inside until another client reaches its business step, and readers pass that step too (showing the page) as do the buyers of the other item: the client that releases the holder is most often one that never contends for its lock"
	rwPauseWhy     = "measured: 10 of 10 runs overlapped, 8 oversold; 2 (embedded seed 1, redis-server seed 3) overlapped without an oversell. The fault strikes the first holder to reach its business step, and a reader showing the page is one: its read lock's lease runs out while its node is paused, a writer enters, and the reader, woken, writes nothing"
	rwPartitionWhy = "measured: 8 of 10 runs overlapped; seed 3 stayed clean on both servers. The cut holder may be a reader, or the cut may come when no writer of the holder's item is waiting"
)

// fairPauseWhy is the measured truth of the fair lock under a pause.
const fairPauseWhy = "the catalog's row is watchdog's; measured: overlapped and oversold in most runs, not every one (one CI run of the truth table had seed 2 of 5 stay clean on redis-server). The lock goes to the head of the queue only: when the head is a waiter of the paused node, nobody takes the lock while the pause lasts, and the paused holder may finish before that waiter, woken with its node, gets in"

// fairCrashWhy is the measured truth of the fair lock under a crash.
const fairCrashWhy = "the catalog's row is watchdog's (recovers); measured: on a quiet machine it recovered in 20 of 20 seeds, but with six sales at once on two cores 5 of 6 stalled after 4 to 78 units. Nobody tells the next waiter that a dead holder's lease ran out (no release is published), and a waiter that last tried while second in line sleeps until its place would lapse, up to Redisson's threadWaitTime (5 minutes): the stall users of RFairLock report when a holder dies (redisson issue 3730, \"FairLock deadlock again\"). Safety holds either way; liveness is not judged"

// fairPartitionWhy is the measured truth of the fair lock under a cut.
const fairPartitionWhy = "the catalog has no partition cell for the fair lock; measured on redis-server over seeds 1-10 of the matrix's cell: 6 overlapped (the cut holder's lease ran out and the head of the queue took the lock), 2 stayed clean, and 2 stalled with units unsold: a waiter of the cut node at the head of the queue keeps its place until it lapses (Redisson's threadWaitTime, 5 minutes), and the lock goes to nobody else until then. The fair queue turns a partition into a stall when the cut node's waiter is first in line"

// steadyLease is the lease of the cells that expect a lease lock to stay
// safe with no fault: long enough that no stall of the harness measured
// can outlast it; it costs nothing, as no lease runs out in them. The matrix's 200 ms lease
// stays for the cells that must break: a stall only breaks those sooner.
const steadyLease = 2 * time.Second

// steadyLeaseWhy says what the cells with steadyLease expect, and when.
const steadyLeaseWhy = "safe while every critical section ends within the lease, which lockbench's own stalls must not cross: measured with the matrix's 200 ms lease on a loaded machine (stress-ng --cpu 8 on 2 cores), the harness stood still 100-300 ms at once and a critical section took 434 ms, so a correct lock's lease ran out under its holder with no fault and no bug (example-correct/none, and slow-holder cells with refreshes at 50 ms, measured overlap, oversell). With a 2 s lease those stalls cannot cross it; a run whose harness is saturated all the same (a stall of a third of the lease) that misses is rerun, and inconclusive if it still misses, never a difference"

// crashLease is the lease of the cells that expect a lease lock to stay
// safe when a holder dies (crash-holder), or pauses after its critical
// section (lua's pause-before-release): long enough that the harness's
// stalls measured on a loaded machine do not cross it, short enough that
// the sale, which waits out the dead holder's lease, stays quick (each
// such cell runs 20 seeds on every kind of server in CI).
const crashLease = time.Second

// crashLeaseWhy says what the cells with crashLease expect, and when.
const crashLeaseWhy = "safe while every critical section ends within the lease: 1 s. Measured with the matrix's 200 ms lease on a loaded machine (stress-ng --cpu 8 on 2 cores), the harness stood still 100-300 ms at once and a critical section took 434 ms, so a correct lock's lease could run out under a live holder with no fault and no bug. Stalls of a second were measured only at a load of 26-30 on 2 cores, and a stall of a third of the lease or more marks the run saturated: it is rerun, and inconclusive if it still misses, never a difference"

// renewLease and renewFor are the lease and the fault of the slow-holder
// cells of locks that renew their lease (a watchdog, a refresh loop): the
// holder's business step outlasts the lease by a quarter of it (rather
// than the fault's default of twice the lease, which would make each
// strike 4 s), once (not the default twice: two strikes of 2.5 s took a
// loaded machine's sale to its 10 s timeout), so the lock must renew to
// stay safe.
const (
	renewLease = 2 * time.Second
	renewFor   = "for=2.5s:count=1"
)

// renewLeaseWhy says what the slow-holder cells of renewing locks expect,
// and when.
const renewLeaseWhy = "safe while the lock renews its lease before it runs out: it renews at a third (watchdog, spin, multi, rw, fair) or half (redislock) of the lease, so a stall of the holder's node longer than the rest of the lease (half of it at least, 1 s here) lets a renewal come too late. Measured with the matrix's 200 ms lease on a loaded machine: redislock's refresh came too late and the cell measured overlap, oversell; with a 1 s lease under stress-ng --cpu 8 on 2 cores (load 26-30), stalls of 0.7-1 s made 4 of 18 seeds miss (each rerun twice, then inconclusive). A stall of a third of the lease or more marks the run saturated: it is rerun, and inconclusive if it still misses, never a difference"

// fairExpireWhy says when the fair lock's expire cell overlaps.
const fairExpireWhy = "measured on a machine that gives lockbench its CPU: an overlap in every seed (embedded seeds 1-3, redis-server seed 1). Beside stress-ng --cpu 8 on 2 cores no seed overlapped, each tried three times, with the fault's default wait and with 3 s (for=3s): the head of the fair queue did not take the deleted key while the holder waited, so the cell is inconclusive (harness saturated) there, never a difference. In a CI-like run at a load of 5-9 (2026-11-26), seed 4 of 5 on redis-server showed no overlap with the harness not saturated: the cell asks for an overlap in most seeds, one at least. Why the queue holds back under load is not yet known"

// deadlockTimeout bounds the sales of the cells that expect a deadlock:
// the matrix's sale ends in about a second when nothing is stuck, so a
// lock that recovers still shows as one well within it.
const deadlockTimeout = 3 * time.Second

// Truth returns lockbench's truth table, as measured: every
// implementation against every fault that applies to it, each cell with
// the verdict that implementation's known bug (or its safety) must
// produce under that fault. It starts from the catalog's table
// (docs/catalog.md); a cell that departs from it, or needs a setting of
// its own, says why (Why). The slice is a copy: rows of implementations
// registered by a user are added with AddRow.
func Truth() []Cell { return slices.Clone(truth) }

// truth is the table Truth returns.
var truth = []Cell{
	{Impl: "none", Burst: true, Want: Oversell},
	{Impl: "local", Nodes: 1, Want: Safe},
	{Impl: "local", Nodes: 2, Burst: true, Want: Overlap, Why: "the catalog says oversell; measured: the two nodes' critical sections always overlap, and the overlap turns into an oversell only when two of them read the same stock, which a small sale does not always do (the 20,000-buyer sale always oversells)"},

	{Impl: "setnx", Want: Safe},
	{Impl: "setnx", Fault: "pause-holder", Want: Safe},
	{Impl: "setnx", Fault: "slow-holder", Want: Safe},
	{Impl: "setnx", Fault: "expire", Want: OverlapOversell},
	{Impl: "setnx", Fault: "crash-holder", Timeout: deadlockTimeout, Want: Deadlock},

	{Impl: "setnx-expire", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "setnx-expire", Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "setnx-expire", Fault: "slow-holder", Want: Overlap},
	{Impl: "setnx-expire", Fault: "expire", Want: Overlap},
	{Impl: "setnx-expire", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "setnx-expire", Fault: "crash-after-setnx", Timeout: deadlockTimeout, Want: Deadlock},

	{Impl: "set-nx-ex", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "set-nx-ex", Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "set-nx-ex", Fault: "slow-holder", Want: OverlapOversell},
	{Impl: "set-nx-ex", Fault: "expire", Want: Overlap},
	{Impl: "set-nx-ex", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},

	{Impl: "owner-check", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "owner-check", Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "owner-check", Fault: "slow-holder", Want: Overlap},
	{Impl: "owner-check", Fault: "expire", Want: Overlap},
	{Impl: "owner-check", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "owner-check", Fault: "pause-before-release", Want: Overlap},

	{Impl: "lua", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "lua", Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "lua", Fault: "slow-holder", Want: OverlapOversell},
	{Impl: "lua", Fault: "expire", Want: Overlap},
	{Impl: "lua", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "lua", Fault: "pause-before-release", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},

	{Impl: "getset", Want: Racy, Why: getsetWhy},
	{Impl: "getset", Fault: "pause-holder", Want: Overlap},
	{Impl: "getset", Fault: "slow-holder", Want: Overlap},
	{Impl: "getset", Fault: "crash-holder", Want: Racy, Why: getsetWhy},
	{Impl: "getset", Fault: "clock-skew", Want: Overlap},

	{Impl: "reentrant", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "reentrant", Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "reentrant", Fault: "slow-holder", Want: Overlap},
	{Impl: "reentrant", Fault: "expire", Want: Overlap},
	{Impl: "reentrant", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},

	{Impl: "watchdog", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "watchdog", Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "watchdog", Fault: "slow-holder", TTL: renewLease, Params: renewFor, Want: Safe, Why: renewLeaseWhy},
	{Impl: "watchdog", Fault: "expire", Want: Overlap},
	{Impl: "watchdog", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "lua", Fault: "server-pause", TTL: pauseLease, Want: DataSafe, Why: serverPauseWhy},
	{Impl: "watchdog", Fault: "server-pause", TTL: pauseLease, Want: DataSafe, Why: serverPauseWhy},
	{Impl: "lua", Fault: "partition", Want: Overlap},
	{Impl: "watchdog", Fault: "partition", Want: Overlap},

	{Impl: "spin", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "spin", Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "spin", Fault: "slow-holder", TTL: renewLease, Params: renewFor, Want: Safe, Why: renewLeaseWhy},
	{Impl: "spin", Fault: "expire", Want: Overlap},
	{Impl: "spin", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "spin", Fault: "server-pause", TTL: pauseLease, Want: DataSafe, Why: serverPauseWhy},
	{Impl: "spin", Fault: "partition", Want: Overlap},

	{Impl: "multi", Items: multiItems, Cart: multiCart, TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "multi", Items: multiItems, Cart: multiCart, Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "multi", Items: multiItems, Cart: multiCart, Fault: "slow-holder", TTL: renewLease, Params: renewFor, Want: Safe, Why: renewLeaseWhy},
	{Impl: "multi", Items: multiItems, Cart: multiCart, Fault: "expire", Want: OverlapMostRuns, Why: multiExpireWhy},
	{Impl: "multi", Items: multiItems, Cart: multiCart, Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "multi", Items: multiItems, Cart: multiCart, Fault: "server-pause", TTL: pauseLease, Want: DataSafe, Why: serverPauseWhy},
	{Impl: "multi", Items: multiItems, Cart: multiCart, Fault: "partition", Want: Overlap},
	{Impl: "rw", Items: rwItems, Reads: rwReads, Hold: rwHold, TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "rw", Items: rwItems, Reads: rwReads, Hold: rwHold, Fault: "pause-holder", Want: Expect{Label: "overlap (oversell in most runs)", Lock: Must}, Why: rwPauseWhy},
	{Impl: "rw", Items: rwItems, Reads: rwReads, Hold: rwHold, Fault: "slow-holder", TTL: renewLease, Params: renewFor, Want: Safe, Why: renewLeaseWhy},
	{Impl: "rw", Items: rwItems, Reads: rwReads, Hold: rwHold, Fault: "expire", Want: Expect{Label: "overlap (some runs)", Lock: Must, Sometimes: true}, Why: rwExpireWhy},
	{Impl: "rw", Items: rwItems, Reads: rwReads, Hold: rwHold, Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "rw", Items: rwItems, Reads: rwReads, Hold: rwHold, Fault: "server-pause", TTL: pauseLease, Want: DataSafe, Why: serverPauseWhy},
	{Impl: "rw", Items: rwItems, Reads: rwReads, Hold: rwHold, Fault: "partition", Want: OverlapMostRuns, Why: rwPartitionWhy},
	{Impl: "fair", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "fair", Fault: "pause-holder", Want: Expect{Label: "overlap, oversell (most runs)", Lock: Must, Data: Must, Sometimes: true}, Why: fairPauseWhy},
	{Impl: "fair", Fault: "slow-holder", TTL: renewLease, Params: renewFor, Want: Safe, Why: renewLeaseWhy},
	{Impl: "fair", Fault: "expire", Want: OverlapMostRuns, Why: fairExpireWhy},
	{Impl: "fair", Fault: "crash-holder", Timeout: deadlockTimeout, Want: Expect{Label: "safe, or a stall", Lock: MustNot, Data: MustNot}, Why: fairCrashWhy},
	{Impl: "fair", Fault: "server-pause", TTL: pauseLease, Want: DataSafe, Why: serverPauseWhy},
	{Impl: "fair", Fault: "partition", Timeout: deadlockTimeout, Want: Expect{Label: "overlap (most runs), or a stall", Lock: Must, Sometimes: true}, Why: fairPartitionWhy},

	{Impl: "renew-naive", Want: Racy, Why: "unsafe as written: the source passes the lease in seconds to PEXPIRE, so a 1 s lease is 1 ms, renewed every 0 ms (1 ms here); holders lose it mid-sale in most runs, not in every one"},

	{Impl: "atomic", Want: Safe},
	{Impl: "atomic", Fault: "server-pause", Want: Safe},
	{Impl: "atomic", Fault: "latency", Want: Safe},

	// The inventory in MySQL/MariaDB (--mysql-dsn): the database guards
	// the sale. The conditional UPDATE has no business step for a holder
	// fault to strike; for-update holds its row lock across one, version
	// reads and writes around one.
	{Impl: "mysql", Want: Safe},
	{Impl: "mysql-for-update", Want: Safe},
	{Impl: "mysql-for-update", Fault: "pause-holder", Want: NoOverlap, Why: rowLockPauseWhy},
	{Impl: "mysql-for-update", Fault: "slow-holder", Want: Safe},
	{Impl: "mysql-for-update", Fault: "crash-holder", Want: Safe},
	{Impl: "mysql-version", Want: Safe},
	{Impl: "mysql-version", Fault: "pause-holder", Want: Safe},
	{Impl: "mysql-version", Fault: "slow-holder", Want: Safe},
	{Impl: "mysql-version", Fault: "crash-holder", Want: Safe},

	{Impl: "fenced", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "fenced", Fault: "pause-holder", Want: DataSafe},
	{Impl: "fenced", Fault: "slow-holder", Want: DataSafe},
	{Impl: "fenced", Fault: "expire", Want: DataSafe},
	{Impl: "fenced", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "fenced", Fault: "server-pause", Want: DataSafe},
	{Impl: "fenced", Fault: "partition", Want: DataSafe},

	// Redlock on five independent servers (three with --redis given three).
	{Impl: "redlock", TTL: redlockLease, Want: Safe, Why: redlockLeaseWhy},
	{Impl: "redlock", Fault: "pause-holder", TTL: redlockLease, Want: Overlap},
	{Impl: "redlock", Fault: "slow-holder", TTL: redlockLease, Want: Overlap},
	{Impl: "redlock", Fault: "expire", TTL: redlockLease, Want: Expect{Label: "overlap on a majority", Lock: Must}, Why: "the key is deleted on a majority of the servers; deleted on a minority, the holder would still hold a majority"},
	{Impl: "redlock", Fault: "crash-holder", TTL: redlockLease, Want: Safe, Why: redlockLeaseWhy},
	{Impl: "redlock", Fault: "restart", TTL: redlockLease, Want: Overlap, Why: redlockRestartWhy},
	{Impl: "redlock", Fault: "cut-link", TTL: redlockLease, Want: NoOverlap, Why: redlockLinkWhy},
	{Impl: "redlock", Fault: "latency", TTL: redlockLease, Want: NoOverlap, Why: redlockLinkWhy},
	{Impl: "redlock", Fault: "pause-holder", Variant: "at=acquiring", Params: "at=acquiring", TTL: redlockLease, Want: NoOverlap, Why: redlockVotesWhy},

	// ZooKeeper locks: the session timeout is the lease.
	{Impl: "zookeeper", TTL: zkSession, Want: Safe},
	{Impl: "zookeeper", Fault: "pause-holder", TTL: zkSession, Want: Overlap},
	{Impl: "zookeeper", Fault: "slow-holder", TTL: zkSession, Want: Safe},
	{Impl: "zookeeper", Fault: "crash-holder", TTL: zkSession, Burst: true, Params: zkCrashAfter, Want: Safe},
	{Impl: "zookeeper", Fault: "partition", TTL: zkSession, Want: Safe, Why: zkPartitionWhy},
	{Impl: "zookeeper-seed002", TTL: zkSession, Want: Safe},
	{Impl: "zookeeper-seed002", Fault: "pause-holder", TTL: zkSession, Want: Overlap},
	{Impl: "zookeeper-seed002", Fault: "crash-holder", TTL: zkSession, Burst: true, Params: zkCrashAfter, Want: Overlap, Why: zk002CrashWhy},
	{Impl: "zookeeper-seed002", Fault: "partition", TTL: zkSession, Want: Overlap, Why: zk002PartitionWhy},

	// etcd's lock (concurrency.Mutex, the official client): the session's
	// TTL is the lease (Jepsen, etcd 3.4.3). The inventory is in Redis but
	// for etcd-txn's, which is in etcd: the server faults, which act on
	// the store, reach the etcd members through etcd-txn only;
	// lose-quorum acts on the etcd cluster wherever the inventory is.
	{Impl: "etcd", TTL: etcdSession, Want: Safe},
	{Impl: "etcd", Fault: "pause-holder", TTL: etcdSession, Want: OverlapOversell, Why: etcdPauseWhy},
	{Impl: "etcd", Fault: "slow-holder", TTL: etcdSession, Want: Safe},
	{Impl: "etcd", Fault: "crash-holder", TTL: etcdSession, Want: Safe},
	{Impl: "etcd", Fault: "clock-skew", TTL: etcdSession, Want: Safe, Why: etcdClockWhy},
	{Impl: "etcd", Fault: "lose-quorum", TTL: etcdSession, Want: NoOverlap, Why: etcdQuorumWhy},
	{Impl: "etcd-fenced", TTL: etcdSession, Want: Safe},
	{Impl: "etcd-fenced", Fault: "pause-holder", TTL: etcdSession, Want: DataSafe},
	{Impl: "etcd-fenced", Fault: "crash-holder", TTL: etcdSession, Want: Safe},
	{Impl: "etcd-txn", TTL: etcdSession, Want: Safe},
	{Impl: "etcd-txn", Fault: "pause-holder", TTL: etcdSession, Want: DataSafe},
	{Impl: "etcd-txn", Fault: "crash-holder", TTL: etcdSession, Want: Safe},
	{Impl: "etcd-txn", Fault: "server-pause", TTL: etcdSession, Want: NoOverlap, Why: etcdServerWhy},
	{Impl: "etcd-txn", Fault: "restart", TTL: etcdSession, Want: NoOverlap, Why: etcdServerWhy},
	{Impl: "etcd-txn", Fault: "lose-quorum", TTL: etcdSession, Want: NoOverlap, Why: etcdQuorumWhy},

	// PostgreSQL: the inventory in PostgreSQL, guarded by an advisory lock
	// or the row lock. pg-advisory's --ttl is its lock sessions'
	// idle_session_timeout.
	{Impl: "pg-advisory", TTL: pgIdle, Want: Safe},
	{Impl: "pg-advisory", Fault: "pause-holder", TTL: pgIdle, Want: Overlap, Why: pgAdvisoryWhy},
	{Impl: "pg-advisory", Fault: "crash-holder", TTL: pgIdle, Want: Safe},
	{Impl: "pg-advisory", Fault: "server-pause", TTL: pgIdle, Want: NoOverlap},
	{Impl: "pg-advisory-xact", Want: Safe},
	{Impl: "pg-advisory-xact", Fault: "pause-holder", Want: NoOverlap, Why: rowLockPauseWhy},
	{Impl: "pg-advisory-xact", Fault: "crash-holder", Want: Safe},
	{Impl: "pg-for-update", Want: Safe},
	{Impl: "pg-for-update", Fault: "pause-holder", Want: NoOverlap, Why: rowLockPauseWhy},
	{Impl: "pg-for-update", Fault: "crash-holder", Want: Safe},

	// Third-party Go locks, with their documented defaults.
	{Impl: "redsync", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "redsync", Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "redsync", Fault: "slow-holder", Want: OverlapOversell},
	{Impl: "redsync", Fault: "expire", Want: Overlap},
	{Impl: "redsync", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "redsync", Fault: "partition", Want: Overlap},

	{Impl: "redislock", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "redislock", Fault: "pause-holder", Want: OverlapOversell},
	{Impl: "redislock", Fault: "slow-holder", TTL: renewLease, Params: renewFor, Want: Safe, Why: renewLeaseWhy},
	{Impl: "redislock", Fault: "expire", Want: Overlap},
	{Impl: "redislock", Fault: "crash-holder", TTL: crashLease, Want: Safe, Why: crashLeaseWhy},
	{Impl: "redislock", Fault: "server-pause", TTL: pauseLease, Want: DataSafe, Why: serverPauseWhy},
	{Impl: "redislock", Fault: "partition", Want: Overlap},

	// Redis failover, on the Sentinel topology (--backend=sentinel): the
	// primary grants a lock its replica never gets, and the Sentinels
	// promote the replica. Measured over seeds 1-5 (failoverWhy).
	{Impl: "setnx", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(5, 5)},
	{Impl: "setnx-expire", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(4, 3)},
	{Impl: "set-nx-ex", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(4, 4)},
	{Impl: "owner-check", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(5, 5)},
	{Impl: "lua", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(4, 4)},
	{Impl: "reentrant", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(5, 5)},
	{Impl: "watchdog", Fault: "failover", TTL: failoverWatchdogLease, Params: failoverWatchdogFor, Want: FailoverOverlap, Why: failoverWhy(5, 5) + failoverWatchdogWhy},
	{Impl: "spin", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(5, 5)},
	{Impl: "fair", Fault: "failover", TTL: failoverLease, Timeout: failoverFairTimeout, Want: MeasuredOnly, Why: failoverFairWhy},
	{Impl: "fenced", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(5, 4) + failoverFencedWhy},
	{Impl: "redsync", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(5, 3)},
	{Impl: "redislock", Fault: "failover", TTL: failoverLease, Want: FailoverOverlap, Why: failoverWhy(5, 5)},
	{Impl: "lua-wait", TTL: steadyLease, Want: Safe, Why: steadyLeaseWhy},
	{Impl: "lua-wait", Fault: "failover", TTL: failoverLease, Want: NoOverlap, Why: failoverWaitWhy},
	{Impl: "lua-wait", Fault: "pause-holder", Want: OverlapOversell, Why: failoverWaitPauseWhy},
}

// failoverLease is the lease of the failover cells: longer than the
// failover itself (the Sentinels promote the replica a second or two
// after the primary stops), so that what a holder loses is the lock the
// replica never had, not a lease that ran out.
const failoverLease = 5 * time.Second

// failoverWatchdogLease and failoverWatchdogFor are the watchdog's
// failover cell: its waiters sleep until the lease they last saw runs
// out (the release that would wake them never comes), so the holder is
// kept past that lease.
const (
	failoverWatchdogLease = 3 * time.Second
	failoverWatchdogFor   = "for=4s"
)

// failoverWhy is the measured truth of a single-primary lock's failover
// cell: in how many of seeds 1-5 it overlapped and oversold.
func failoverWhy(overlaps, oversells int) string {
	return fmt.Sprintf("not in the catalog (source 004: Redisson on Sentinel); measured on lockbench's Sentinel topology (redis-server 7.0.15, lockbench matrix --backend=sentinel --faults=failover, seeds 1-5): an overlap in %d of 5 seeds, an oversell in %d. "+
		"The promoted replica never had the lock, so a second client takes it on the new primary while the first holder is inside, and both read the same stock. "+
		"In a run without an overlap the waiting buyers failed at the failover (go-redis's failover client: context deadline exceeded, or READONLY from a connection still on the old primary) and nobody took the lock within the fault's for; so the cell must show the overlap in one seed at least", overlaps, oversells)
}

const (
	// failoverWatchdogWhy says why the watchdog's cell keeps its holder
	// longer.
	failoverWatchdogWhy = ". The watchdog's waiters sleep until the lease they last saw runs out (the release that would wake them never comes), so the cell's lease is 3 s and its holder is kept up to 4 s: with the other cells' 1 s, 0 of 1 seed overlapped"
	// failoverFencedWhy is what fencing does when its token store fails
	// over too.
	failoverFencedWhy = ". Fencing does not save it: the token counter lives on the primary too, and the promoted replica never had the holder's INCR, so the second holder is handed the same token (measured: 109 and 109, seed 1); the store refuses only older tokens, and both writes from the same stock land"
	// failoverFairTimeout cuts the fair lock's failover sale early: it
	// mostly ends stuck.
	failoverFairTimeout = 5 * time.Second
	// failoverFairWhy is the fair lock's measured failover.
	failoverFairWhy = "measured, not judged: an overlap and an oversell in 1 of 5 seeds; in the 4 others the sale stuck until its timeout with most buyers waiting, no overlap (the queue and its timeouts, written while replication was held, are lost with the old primary, and the waiters wait for places and wake-ups that no longer exist)"
	// failoverWaitWhy is lua-wait's measured failover.
	failoverWaitWhy = "measured: no overlap and no oversell in 5 of 5 seeds: while replication is held no try is granted (WAIT answers 0 and the lock is given back), so the primary that stops has no lock the replica lacks. The cell does not judge liveness: buyers the failover client fails at the failover give up (50 and 58 units unsold in 2 of the 5 seeds)"
	// failoverWaitPauseWhy is what still breaks lua-wait.
	failoverWaitPauseWhy = "measured: a pause past the lease breaks it as it breaks lua (seeds 1-5: 131-158 overlaps, as many units oversold): waiting for the replica does not make a lease a fence"
)
