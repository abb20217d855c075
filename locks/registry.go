package locks

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// The sources' defaults.
const (
	// sourceLease is source 003's 30-second expiry and Redisson's watchdog
	// timeout (source 004).
	sourceLease = 30 * time.Second
	// getsetLease is source 002's RedisLock interval: 5000 ms.
	getsetLease = 5 * time.Second
	// getsetTimeout is how long source 002's tryLock tries: 1000 ms.
	getsetTimeout = time.Second
	// sourceSpin is source 003's spin sleep (20 ms) from the second rework on.
	sourceSpin = 20 * time.Millisecond
)

// simple builds the New function of a spinning string-lock variant.
func simple(wait backoff, try func(context.Context, *Env, string) (uint64, bool, error), free func(context.Context, *Env, string) error) func(context.Context, Env) (Locker, error) {
	return func(_ context.Context, env Env) (Locker, error) {
		return &simpleLock{env: env, wait: wait, try: try, free: free}, nil
	}
}

// backoffJitter is how lua and fenced wait: exponential with full jitter,
// from 1 ms up to 32 ms.
var backoffJitter = jittered{base: time.Millisecond, max: 32 * time.Millisecond}

// catalog is every lock algorithm of lockbench (All).
var catalog = []Impl{
	{
		Info: Info{
			Name:      "local",
			Summary:   "an in-process reentrant mutex per node (synchronized / ReentrantLock)",
			Source:    "000, 001 jvm lock, 003 first listing",
			Notes:     "Excludes the clients of its own node only: safe with --nodes=1, oversells with two or more.",
			Reentrant: true,
		},
		New: newLocal,
	},
	{
		Info: Info{
			Name:    "setnx",
			Summary: "SETNX lock owner, spin 20 ms, DEL; no expiry",
			Source:  "001 version 1; 003 first and second rework",
			Notes:   "A holder that dies never unlocks: the lock is held forever. Source 001 spins 50 ms; lockbench uses source 003's 20 ms.",
		},
		New: simple(fixedSleep(sourceSpin), setNX, del),
	},
	{
		Info: Info{
			Name:       "setnx-expire",
			Summary:    "SETNX then a separate EXPIRE (two commands), spin 20 ms, DEL",
			Source:     "000 before SET NX EX; 003 third-rework discussion",
			Notes:      "A death between SETNX and EXPIRE leaves a lock with no expiry; EXPIRE is sent as PEXPIRE so that sub-second leases work.",
			DefaultTTL: sourceLease,
		},
		New: simple(fixedSleep(sourceSpin), setNXThenExpire, del),
	},
	{
		Info: Info{
			Name:       "set-nx-ex",
			Summary:    "SET lock owner NX EX ttl, spin 20 ms, plain DEL to unlock",
			Source:     "000 first impl; 001 version 2; 003 third rework",
			Notes:      "The DEL deletes whoever holds the lock by then: a holder that outlives its lease frees the next owner's lock. Sent as PX.",
			DefaultTTL: sourceLease,
		},
		New: simple(fixedSleep(sourceSpin), setNXPX, del),
	},
	{
		Info: Info{
			Name:       "owner-check",
			Summary:    "SET NX EX with owner uuid:thread; unlock GET, compare, then DEL (not atomic)",
			Source:     "000 误删 fix; 001 version 3; 003 fourth rework",
			Notes:      "A pause between the compare and the DEL deletes the next owner's lock. An unlock that finds the key gone fails, as the source's requireNonNull does.",
			DefaultTTL: sourceLease,
		},
		New: simple(fixedSleep(sourceSpin), setNXPX, getCompareDel),
	},
	{
		Info: Info{
			Name:       "lua",
			Summary:    "SET NX PX, compare-and-delete Lua unlock; waiters back off with jitter",
			Source:     "000 final; 001 version 4; 003 fifth and sixth rework; 004",
			Notes:      "Correct while the holder finishes within its lease; a pause or slow step past the lease lets a second holder in. Waits with jittered exponential backoff (1-32 ms) instead of the sources' fixed sleep.",
			DefaultTTL: sourceLease,
		},
		Scripts: []*redis.Script{luaUnlock},
		New:     simple(backoffJitter, setNXPX, compareAndDelete),
	},
	{
		Info: Info{
			Name:       "lua-wait",
			Summary:    "lua's SET NX PX, then WAIT 1 on the same connection: granted only once a replica has the lock, else given back and tried again (Redisson's sync to replicas)",
			Source:     "004 Redisson on Sentinel, with the lock synced to the replicas",
			Notes:      "Needs a primary with a replica (--backend=sentinel, or --sentinel for a deployment of your own): WAIT answers 0 on a server without one (the embedded server, a lone Redis), so the lock is never obtained there, and lockbench refuses to run it. WAIT waits a tenth of the lease, 100 ms at most (within the command timeout); a try the replica did not acknowledge in time deletes its lock (compare-and-delete) and counts as not obtained. It survives a failover that loses what the replica lacked; it is still a lease: a pause or slow step past the lease lets a second holder in.",
			DefaultTTL: sourceLease,
		},
		Uses:    UsesReplica,
		Scripts: []*redis.Script{luaUnlock},
		New:     simple(backoffJitter, replicatedTry, compareAndDelete),
	},
	{
		Info: Info{
			Name:       "getset",
			Summary:    "value is the expiry time from the client's clock; expired locks are taken over with GETSET",
			Source:     "002 RedisLock",
			Notes:      "tryLock tries for 1000 ms, sleeping 200-240 ms between tries, then gives up, as in the source. A client whose clock runs ahead steals live locks. Measured: it also breaks without any fault under contention, because the source counts a failed GET (the key just deleted by an unlock) as expired, and its GET/GETSET pair then steals the lock another client has just taken with SETNX.",
			DefaultTTL: getsetLease,
		},
		New: newGetset,
	},
	{
		Info: Info{
			Name:       "reentrant",
			Summary:    "hash lock, HINCRBY per owner in Lua, nested acquire by the same owner; spin 60 ms",
			Source:     "001 version 5; 003 seventh rework",
			Notes:      "EXPIRE in seconds is sent as PEXPIRE so that sub-second leases work.",
			Reentrant:  true,
			DefaultTTL: sourceLease,
		},
		Scripts: []*redis.Script{reentrantLock, reentrantUnlock},
		New:     simple(fixedSleep(60*time.Millisecond), reentrantTry, reentrantFree),
	},
	{
		Info: Info{
			Name:       "watchdog",
			Summary:    "reentrant hash lock renewed every lease/3 while held; waiters woken one per node by pub/sub (Redisson)",
			Source:     "003 eighth rework; 004 Redisson",
			Notes:      "The lease is renewed while the holder runs, so a slow holder keeps it; a paused node's watchdog stops with it, so a pause past the lease lets a second holder in.",
			Reentrant:  true,
			DefaultTTL: sourceLease,
		},
		Scripts:  []*redis.Script{watchdogLock, watchdogUnlock, watchdogRenew},
		Promises: Promises{Renewal: true},
		New:      newWatchdog,
	},
	{
		Info: Info{
			Name:       "spin",
			Summary:    "Redisson's spin lock: the watchdog's reentrant hash lock, renewed while held, waiters retrying after an exponential backoff instead of pub/sub",
			Source:     "004 Redisson's lock family (RSpinLock)",
			Notes:      "Redisson's RedissonSpinLock: the RLock script and watchdog, no subscription; a waiter sleeps 1 ms, doubling up to 128 ms (Redisson's default ExponentialBackOff), never past the holder's remaining lease. Faults act as on watchdog: a paused node's watchdog stops with it, so a pause past the lease lets a second holder in.",
			Reentrant:  true,
			DefaultTTL: sourceLease,
		},
		Scripts:  []*redis.Script{watchdogLock, spinUnlock, watchdogRenew},
		Promises: Promises{Renewal: true},
		New:      newSpin,
	},
	{
		Info: Info{
			Name:       "fair",
			Summary:    "Redisson's fair lock: the watchdog's reentrant hash lock and renewal, granted in the order of the waiters' first tries (a queue, and a sorted set of when each place lapses)",
			Source:     "004 Redisson's lock family (RFairLock)",
			Notes:      "Redisson's RedissonFairLock: the first try of a waiter puts it at the end of a list, its place lapsing five minutes (Redisson's threadWaitTime) after the place ahead unless it tries again; the lock goes to the head of the queue only; a release publishes on the head's own channel (one pattern subscription per node here, waking that waiter alone). The lapse instants come from the calling client's clock, as in Redisson. A release that finds the lock gone is reported as not held; Redisson reports success there. Faults act as on watchdog: a paused node's watchdog stops with it.",
			Reentrant:  true,
			DefaultTTL: sourceLease,
		},
		Scripts:  []*redis.Script{fairLock, fairUnlock, fairCancel, watchdogRenew},
		Promises: Promises{Renewal: true, FIFO: true},
		New:      newFair,
	},
	{
		Info: Info{
			Name:       "multi",
			Summary:    "Redisson's MultiLock: the watchdog's lock on each of several keys (a cart's items), all or none, in the caller's order, each renewed while held",
			Source:     "004 Redisson's lock family (RedissonMultiLock)",
			Notes:      "Redisson's RedissonMultiLock over RLocks: lock() runs rounds of 1.5 s per lock (its baseWaitTime); a round takes the locks in the given order (the workload sorts a cart's items: every cart locks in one order, so two carts cannot deadlock), each waiting by pub/sub at most what is left of the round; one that cannot be had in time makes the round release the locks it took (failedLocksLimit 0: all or none) and the next round start again from the first. Each lock is the watchdog's hash lock with its own renewal, subscription and lease. A caller that stops waiting (its context ends) releases what it took. With one item it is the watchdog lock. Faults act as on watchdog: a paused node's watchdogs stop with it, and each lock of a paused holder's cart can be taken by another cart.",
			Reentrant:  true,
			DefaultTTL: sourceLease,
		},
		Multi:    true,
		Scripts:  []*redis.Script{watchdogLock, watchdogUnlock, watchdogRenew},
		Promises: Promises{Renewal: true},
		New:      newMulti,
	},
	{
		Info: Info{
			Name:       "rw",
			Summary:    "Redisson's ReadWriteLock: one hash with a read or write mode, any number of readers (each level with a lease key of its own) or one writer, renewed while held",
			Source:     "004 Redisson's lock family (RedissonReadWriteLock)",
			Notes:      "Redisson's RedissonReadWriteLock: the hash holds mode=read|write and a count per owner (the writer as OWNER:write); a reader enters while readers hold it or while it holds the write lock itself, and each of its levels gets a lease key KEY:OWNER:rwlock_timeout:N (Redisson puts the lock name in braces, {KEY}, a cluster hash tag; here the key itself, so that the run's prefix covers them); a reader's release keeps the hash for as long as the longest lease key left. The readers' watchdog renews the hash and every reader's lease key, not only its own, as Redisson's does: a live reader keeps a paused or crashed reader's entry alive. A writer's release wakes every waiter of a node, a reader's one (Redisson's LockPubSub releases every waiting thread on the write lock's message): measured, 4,000 buyers of two items with 30% readers, 269 commands per sale and 34 sales/s against watchdog's 9.4 and 696, every waiter retrying after each writer. Buyers take the write lock; with --reads the product-page readers take the read lock. A release that finds the hash gone is reported as not held (Redisson answers success). Faults act as on watchdog: a paused node's watchdogs stop with it.",
			Reentrant:  true,
			DefaultTTL: sourceLease,
		},
		Scripts:  []*redis.Script{rwReadLock, rwReadUnlock, rwReadRenew, rwWriteLock, rwWriteUnlock, watchdogRenew},
		Promises: Promises{Renewal: true},
		New:      newRW,
	},
	{
		Info: Info{
			Name:       "renew-naive",
			Summary:    "source 001's renewal thread as written: renews whoever holds the lock; lease seconds used as milliseconds",
			Source:     "001 last version",
			Notes:      "EXISTS KEYS[1] ARGV[1] counts keys, so every renewal thread keeps renewing the lock while anyone holds it, and stops only when the key is gone; --ttl=30s gives a 30 ms lease renewed every 15 ms, and a lease under 1 s a 1 ms one. Measured (lockbench matrix): with sub-second leases holders lose the lock mid-sale in most runs with no fault at all.",
			Reentrant:  true,
			DefaultTTL: sourceLease,
		},
		Scripts: []*redis.Script{naiveLock, naiveRenew, naiveUnlock},
		New:     newNaive,
	},
	{
		Info: Info{
			Name:       "redlock",
			Summary:    "SET NX PX with a random value on N independent servers (default 5); held on a majority within the lease less elapsed time and drift; released on all",
			Source:     "004 RedLock (antirez's Redlock, Redisson's RedissonRedLock)",
			Notes:      "Each try sends SET NX PX to the servers one after another, in the same order for every client, each given a tenth of the lease (at least 50 ms), and stops once a majority is out of reach (Redisson's failedLocksLimit; asking every server at once split the votes under contention and nobody won: measured 1.4 sales/s); the lock is held when a majority said yes and the lease less the try's time and the drift (1% of the lease plus 2 ms) is still positive, else the try's value is deleted wherever it may have landed and the next try, with a fresh random value, follows a jittered 1-32 ms pause. Release is the compare-and-delete Lua on every server; fewer than a majority deleting is ErrNotHeld. No renewal, no fencing: a pause or slow step past the lease lets a second holder in; the key vanishing on a majority does too; and a server that restarts empty under a holder that had a bare majority hands a second client the majority (Kleppmann). Without several servers it runs on the one (a majority of one).",
			DefaultTTL: sourceLease,
		},
		Uses:     UsesServers,
		Promises: Promises{Validity: true},
		Scripts:  []*redis.Script{luaUnlock},
		New:      newRedlock,
	},
	{
		Info: Info{
			Name:       "zookeeper",
			Summary:    "ZooKeeper: ephemeral sequential child, lowest holds, each waiter watches only its predecessor (no herd); the session timeout is the lease",
			Source:     "002 ZookeeperLock, done right",
			Notes:      zookeeperNotes,
			DefaultTTL: zkSourceSession,
		},
		Uses: UsesZooKeeper,
		New:  newZooKeeper(false),
	},
	{
		Info: Info{
			Name:       "zookeeper-seed002",
			Summary:    "source 002's ZookeeperLock as written: lock() catches every exception and returns, letting the caller in without the lock",
			Source:     "002 ZookeeperLock",
			Notes:      zookeeper002Notes,
			DefaultTTL: zkSourceSession,
		},
		Uses: UsesZooKeeper,
		New:  newZooKeeper(true),
	},

	{
		Info: Info{
			Name:       "fenced",
			Summary:    "lua lock that hands out a monotonic fencing token; the store refuses stale tokens",
			Source:     "beyond the sources: Kleppmann's fencing tokens",
			Notes:      "Lock overlaps can still happen and are reported, but the store fences every read and write, so a stale holder's write is refused and data stays safe.",
			Beyond:     true,
			DefaultTTL: sourceLease,
		},
		Fenced:  true,
		Scripts: []*redis.Script{fencedLock, luaUnlock},
		New:     simple(backoffJitter, fencedTry, compareAndDelete),
	},
	{
		Info: Info{
			Name:       "redsync",
			Summary:    "third-party Redlock on one Redis: SET NX PX with a random value, Lua compare-and-delete; 32 tries 50-250 ms apart",
			Source:     "third-party: go-redsync/redsync " + redsyncVersion,
			Notes:      "The library's defaults (expiry 8 s, 32 tries, a random 50-250 ms between them, drift factor 0.01, timeout factor 0.05) except the expiry, which is --ttl when given (the matrix and --faults use short leases). One pool: the node's own go-redis client, so the quorum is 1. No refresh unless the caller calls Extend, which lockbench does not: a holder slower than its lease loses it. A buyer whose 32 tries all find the lock taken gives up (ErrFailed, or the last try's ErrTaken). Measured: under server-pause it oversells in some runs (1-2 of 20 seeds on the embedded server): all tries of a Lock share one value, each try gets 5% of the expiry, and a timed-out try is followed by a release of that value; queued behind the pause, a late release deletes the lock a later try has just won. Racy, so the matrix has no redsync/server-pause cell.",
			Beyond:     true,
			DefaultTTL: redsyncExpiry,
		},
		New: newRedsync,
	},
	{
		Info: Info{
			Name:       "redislock",
			Summary:    "third-party lock: SET NX PX with a random token, Lua release; refreshed every half lease while held",
			Source:     "third-party: bsm/redislock " + redislockVersion,
			Notes:      "The library has no default lease or retry: lockbench gives it a 5 s lease (--ttl when given; its README example's 100 ms lapses whenever a busy machine stalls the process for 50 ms) and its README example's refresh after half the lease, run as a loop for as long as the lease is held and stopped with the client's context (a crashed client's refresh dies with it) or on release. Obtain retries every 100 ms as the retry example does, but until the buyer's deadline (the custom-deadline example's bound) rather than the example's 3 tries, which would make most buyers of a flash sale give up within 300 ms. A paused node's refresh stops with it.",
			Beyond:     true,
			DefaultTTL: redislockDefaultLease,
		},
		Promises: Promises{Renewal: true},
		New:      newRedislock,
	},
	{
		Info: Info{
			Name:       "etcd",
			Summary:    "etcd's concurrency.Mutex on a session with a TTL (the official Go client): the lowest create revision under the lock's prefix holds; the lease is kept alive while the node runs",
			Source:     "beyond the sources: etcd's client/v3/concurrency (Jepsen, etcd 3.4.3)",
			Notes:      etcdNotes,
			Beyond:     true,
			DefaultTTL: etcdSessionTTL,
		},
		Uses: UsesEtcd,
		New:  newEtcd(false),
	},
	{
		Info: Info{
			Name:       "etcd-fenced",
			Summary:    "etcd's concurrency.Mutex, its key's create revision the fencing token at the fenced store",
			Source:     "beyond the sources: Jepsen's advice for etcd 3.4.3",
			Notes:      etcdFencedNotes,
			Beyond:     true,
			DefaultTTL: etcdSessionTTL,
		},
		Fenced: true,
		Uses:   UsesEtcd,
		New:    newEtcd(true),
	},
}

// All returns lockbench's own lock algorithms, in the order the sources
// build them. It is a catalog, not a registry: the implementations a run
// can name, a user's included, are the harness's (harness.All,
// harness.Register), which lists these among the sales without a lock.
// The slice is a copy.
func All() []Impl { return slices.Clone(catalog) }

// Lookup returns lockbench's own lock algorithm called name.
func Lookup(name string) (Impl, bool) {
	i := slices.IndexFunc(catalog, func(im Impl) bool { return im.Name == name })
	if i < 0 {
		return Impl{}, false
	}
	return catalog[i], true
}

// Names returns the names of lockbench's own lock algorithms, sorted.
func Names() []string {
	out := make([]string, 0, len(catalog))
	for _, im := range catalog {
		out = append(out, im.Name)
	}
	slices.Sort(out)
	return out
}
