package faults

import (
	"context"
	"fmt"
	"slices"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
)

// fault is the one implementation of Fault: data plus a plan builder.
type fault struct {
	name    string
	summary string
	params  []Param
	needs   func(workload.Reach) error // nil: every reach
	// inProcess marks the faults that strike at the sale's probe points
	// or move its nodes' clocks: only a sale lockbench runs can take them.
	inProcess bool
	// outside names, for an inProcess fault, the fault that does the
	// nearest thing to a service under test from outside it, for the
	// message that refuses the first.
	outside string
	// onHolder marks the faults every lock can take (see Fault.OnHolder).
	onHolder bool
	build    func(v values, seed uint64) (plan, error)
}

func (f *fault) Name() string    { return f.name }
func (f *fault) Summary() string { return f.summary }
func (f *fault) Params() []Param { return f.params }
func (f *fault) OnHolder() bool  { return f.onHolder }

func (f *fault) Available(t workload.Reach) error {
	if f.inProcess && !t.InProcess {
		err := fmt.Errorf("%w: %s strikes inside the sale's lock (its holders, its clocks), which lockbench cannot reach in a service under test", ErrUnavailable, f.name)
		if f.outside != "" {
			err = fmt.Errorf("%w; %s", err, f.outside)
		}
		return err
	}
	if f.needs == nil {
		return nil
	}
	return f.needs(t)
}

// routed is the need of the faults that act through the fault proxy: the
// nodes must reach their servers by addresses the proxy can stand in for.
func routed(name string) func(workload.Reach) error {
	return func(t workload.Reach) error {
		if !t.Routed {
			return fmt.Errorf("%w: %s acts on the link to a Redis or ZooKeeper through lockbench's fault proxy, and %s is reached directly (for a service under test, give --target-redis-via)", ErrUnavailable, name, t)
		}
		return nil
	}
}

// restartable is the need of the faults that kill a client: with nodes
// in processes its node is killed, and lockbench must be able to start
// it again, which it cannot for nodes on other machines.
func restartable(name string) func(workload.Reach) error {
	return func(t workload.Reach) error {
		if t.RemoteNodes {
			return fmt.Errorf("%w: %s kills a node's process and starts it again, which lockbench cannot do to nodes on other machines (--node-mode=remote)", ErrUnavailable, name)
		}
		return nil
	}
}

func (f *fault) plan(s Spec, env Env, seed uint64) (plan, error) {
	return f.build(values{spec: s, env: env}, seed)
}

// The faults of lockbench's catalog, in the order of its fault table
// (docs/catalog.md).
var (
	// PauseHolder stops the whole node of a lock holder (its clients, its
	// watchdog timers) inside the critical section for longer than the
	// lease: a GC pause. A second holder enters; the first writes a stale
	// stock when it wakes. By default it strikes every holder (for a quarter
	// of the sale's timeout) and ends each pause as soon as the next
	// holder has read (until=next), the first then writing before it: the
	// smallest interleaving, which a fence off by one token lets through.
	PauseHolder Fault = &fault{
		name:      "pause-holder",
		summary:   "stop-the-world pause of the holder's node, inside its critical section, longer than the lease (a GC pause)",
		params:    []Param{pFor("pause length"), pUntil, pCountAll, pWithin, pAfter, pEvery, pNode, pAt},
		inProcess: true,
		onHolder:  true,
		outside:   "pause-instance stops a whole instance from outside, on a schedule, whoever holds the lock (give --target-pid or --target-container)",
		build:     holder("", pauseHolder),
	}
	// SlowHolder makes one holder's business step outlast the lease while
	// the rest of its node runs on (a watchdog keeps renewing).
	SlowHolder Fault = &fault{
		name:      "slow-holder",
		summary:   "the holder's business step outlasts the lease; the rest of its node keeps running",
		params:    []Param{pFor("extra business time"), pCount, pWithin, pAfter, pEvery, pNode},
		inProcess: true,
		onHolder:  true,
		build:     holder(locks.Business, slowHolder),
	}
	// PauseBeforeRelease stalls a client between its owner check and its
	// DEL past the lease, then lets the DEL remove the next holder's lock
	// while that holder is inside its critical section. By default it
	// strikes every release (for a quarter of the sale's timeout): a release
	// that skips its owner check now and then is met.
	PauseBeforeRelease Fault = &fault{
		name:    "pause-before-release",
		summary: "pause between the owner check and the DEL, longer than the lease: the DEL removes the next owner's lock",
		params: []Param{
			// Just past the lease: long enough for the lease to run out
			// and another client to take the lock, short enough that the
			// stale DEL lands while the sale still has buyers to hurt.
			{Name: "for", Doc: "pause length", Default: "1.25×lease", kind: durationKind, def: leases(1.25)},
			pCountAll, pWithin, pAfter, pEvery, pNode,
		},
		inProcess: true,
		onHolder:  true,
		build:     holder(locks.BeforeDelete, pauseBeforeRelease),
	}
	// Expire deletes the lock key while its holder is inside the critical
	// section (an eviction, a failover, a flush), then keeps the holder
	// there until a second client has read the stock.
	Expire Fault = &fault{
		name:      "expire",
		summary:   "the lock key vanishes while held (eviction, failover, flush); the holder is not told",
		params:    []Param{pFor("longest wait for a second holder"), pCount, pWithin, pAfter, pEvery, pNode},
		inProcess: true,
		onHolder:  true,
		build:     holder(locks.Business, expire),
	}
	// CrashHolder kills a holder inside its critical section: it never
	// releases, and its watchdog dies with it.
	CrashHolder Fault = &fault{
		name:      "crash-holder",
		summary:   "a holder dies without unlocking; its watchdog dies with it",
		params:    []Param{pOnce, pAfter, pEveryCrash, pNode, pAt},
		inProcess: true,
		onHolder:  true,
		outside:   "crash-instance kills a whole instance from outside and starts it again, on a schedule, whoever holds the lock (give --target-pid and --target-start)",
		needs:     restartable("crash-holder"),
		build:     holder("", crash),
	}
	// CrashAfterSetNX kills a client between SETNX and its separate
	// EXPIRE (setnx-expire): the lock never expires.
	CrashAfterSetNX Fault = &fault{
		name:      "crash-after-setnx",
		summary:   "death between SETNX and EXPIRE: the lock never expires (only setnx-expire has that window)",
		params:    []Param{pOnce, pAfter, pEveryCrash, pNode},
		inProcess: true,
		needs:     restartable("crash-after-setnx"),
		build:     holder(locks.AfterSetNX, crash),
	}
	// ClockSkew runs one node's clock ahead (or behind) for the whole
	// sale; only locks that read the client's clock (getset) notice.
	ClockSkew Fault = &fault{
		name:    "clock-skew",
		summary: "one node's clock runs ahead; locks that trust client clocks (getset) steal live locks (the first holders on other nodes wait, half a lease at most, for a steal)",
		params: []Param{
			{Name: "offset", Doc: "how far the node's clock runs ahead", Default: "2×lease", kind: durationKind, def: leases(2)},
			{Name: "node", Doc: "whose clock moves", Default: "the last node", kind: nodeKind,
				def: func(v values) string { return fmt.Sprint(max(0, v.env.Nodes-1)) }},
			{Name: "after", Doc: "when the clock jumps, after the sale starts", Default: "0s", kind: durationKind, def: fixed("0s")},
		},
		inProcess: true,
		onHolder:  true,
		build:     clockSkew,
	}
	// ServerPause stops the server from answering for longer than the
	// clients' command timeout: commands time out with unknown outcomes.
	ServerPause Fault = &fault{
		name:    "server-pause",
		summary: "the server stops answering (CLIENT PAUSE, docker pause, SIGSTOP of the Sentinel topology's primary, or the embedded server's own hook) past the command timeout: unknown outcomes",
		params: []Param{
			{Name: "for", Doc: "pause length", Default: "1.5×command timeout", kind: durationKind,
				def: func(v values) string { return round(v.env.CommandTimeout * 3 / 2).String() }},
			pOnce, pAfter, pEvery,
		},
		needs: func(t workload.Reach) error {
			if !t.Pausable() {
				return fmt.Errorf("%w: server-pause needs a server lockbench can pause (%s cannot)", ErrUnavailable, t)
			}
			return nil
		},
		build: serverPause,
	}
	// Restart restarts the server without persistence: every lease, and
	// every other key, vanishes at once.
	Restart Fault = &fault{
		name:    "restart",
		summary: "the server restarts without persistence: all leases (and all data) vanish at once; for a lock on several servers (redlock), one of a holder's bare majority restarts empty (Kleppmann)",
		params: []Param{pOnce, pAfter, {Name: "every", Doc: "least time between two restarts", Default: "1s", kind: durationKind, def: fixed("1s")},
			pFor("on several servers: longest wait for a second holder"),
			{Name: "node", Doc: "on several servers: the node cut off from a minority, whose holder loses a server", Default: "0", kind: nodeKind, def: fixed("0")}},
		needs: func(t workload.Reach) error {
			if !t.Restartable() {
				return fmt.Errorf("%w: restart needs a server lockbench started itself, --backend=embedded or docker (%s is not)", ErrUnavailable, t)
			}
			return nil
		},
		build: restart,
	}
	// LoseQuorum stops a majority of the members of a replicated server
	// (two of etcd's three) for longer than the lease: no leader, no
	// commit, no lease expiry; locks and sales wait, and nothing may be
	// granted twice.
	LoseQuorum Fault = &fault{
		name:    "lose-quorum",
		summary: "a majority of a replicated server's members (two of the three etcd members lockbench starts, the leader among them) stop (SIGSTOP, or docker pause of their containers) for longer than the lease, then resume: no leader, no commit, no lease runs out; buyers may give up, nothing may be granted twice",
		params:  []Param{pFor("how long the quorum is gone"), pOnce, pAfter, pEvery},
		needs: func(t workload.Reach) error {
			if t.Quorum == nil {
				return fmt.Errorf("%w: lose-quorum needs a replicated server whose members lockbench started (the etcd cluster it starts without --etcd), and the sale has none (%s)", ErrUnavailable, t)
			}
			return nil
		},
		build: loseQuorum,
	}
	// PauseInstance stops one instance of a service under test, its whole
	// process, for a while: SIGSTOP, then SIGCONT.
	PauseInstance Fault = &fault{
		name:    "pause-instance",
		summary: "one instance of a service under test stops, as a stop-the-world pause would, then runs on: SIGSTOP and SIGCONT of its pid (--target-pid), or docker pause and unpause of its container (--target-container)",
		params: []Param{pFor("pause length"), pOnce, pAfter, pEvery,
			{Name: "node", Doc: "the instance to pause", Default: "0", kind: nodeKind, def: fixed("0")}},
		needs: func(t workload.Reach) error {
			if !t.Instances {
				return fmt.Errorf("%w: pause-instance stops a service's instance by its pid or its container: give --target-pid or --target-container", ErrUnavailable)
			}
			return nil
		},
		build: pauseInstance,
	}
	// CrashInstance kills one instance of a service under test and starts
	// it again.
	CrashInstance Fault = &fault{
		name:    "crash-instance",
		summary: "one instance of a service under test is killed (SIGKILL of its pid: its connections close, its locks stay until they expire), stays down, and is started again with its command (--target-pid, --target-start)",
		params: []Param{{Name: "down", Doc: "how long it stays down", Default: "0s", kind: durationKind, def: fixed("0s")}, pOnce, pAfter,
			{Name: "every", Doc: "least time between two crashes", Default: "1s", kind: durationKind, def: fixed("1s")},
			{Name: "node", Doc: "the instance to crash", Default: "0", kind: nodeKind, def: fixed("0")}},
		needs: func(t workload.Reach) error {
			if !t.Restarts {
				return fmt.Errorf("%w: crash-instance kills a service's instance and starts it again: give --target-pid and --target-start for every instance", ErrUnavailable)
			}
			return nil
		},
		build: crashInstance,
	}
	// CutLink cuts one node's links to its servers on a schedule.
	CutLink Fault = &fault{
		name:    "cut-link",
		summary: "the link between one node and its servers is cut both ways for a while, on a schedule, whoever holds the lock (toxiproxy in process): what is sent meanwhile is held and delivered late; for a service under test, the link between an instance and its Redis (--target-redis-via)",
		params: []Param{pFor("cut length"), pOnce, pAfter, pEvery,
			{Name: "node", Doc: "the node (instance) whose link is cut", Default: "0", kind: nodeKind, def: fixed("0")}},
		needs: routed("cut-link"),
		build: cutLink,
	}
	// DeleteLock makes the lock's key vanish on a schedule, whoever holds
	// it, as an eviction or a flush would.
	DeleteLock Fault = &fault{
		name:    "delete-lock",
		summary: "the lock's key vanishes on a schedule, whoever holds it (an eviction, a flush); for a service under test, the key --target-lock-key names in the Redis --redis gives",
		params:  []Param{pOnce, pAfter, {Name: "every", Doc: "least time between two deletions", Default: "lease", kind: durationKind, def: leases(1)}},
		needs: func(t workload.Reach) error {
			if !t.LockKey {
				return fmt.Errorf("%w: delete-lock needs the lock's key and its Redis: with --target, give --target-lock-key and --redis", ErrUnavailable)
			}
			return nil
		},
		build: deleteLock,
	}
	// Latency delays everything between one node and the server, through
	// a TCP proxy (toxiproxy, in process).
	Latency Fault = &fault{
		name:    "latency",
		summary: "delay between one node and the server (toxiproxy in process)",
		params: []Param{
			{Name: "delay", Doc: "added to every reply", Default: "20ms", kind: durationKind, def: fixed("20ms")},
			{Name: "jitter", Doc: "random spread of the delay", Default: "5ms", kind: durationKind, def: fixed("5ms")},
			{Name: "node", Doc: "node whose link is slowed", Default: "0", kind: nodeKind, def: fixed("0")},
			{Name: "after", Doc: "when the delay starts", Default: "0s", kind: durationKind, def: fixed("0s")},
			{Name: "for", Doc: "how long it lasts; 0 is until the end", Default: "0s", kind: durationKind, def: fixed("0s")},
		},
		needs: routed("latency"),
		build: latency,
	}
	// Partition cuts one node off the server while one of its clients
	// holds the lock: what it sends is dropped until the cut heals.
	Partition Fault = &fault{
		name:      "partition",
		summary:   "cut between a holder's node and the server (toxiproxy in process): its commands are lost, outcomes unknown",
		params:    []Param{pFor("cut length"), pOnce, pAfter, pEvery, pNode},
		needs:     routed("partition"),
		inProcess: true, // it strikes when a holder of the node is inside
		outside:   "cut-link cuts an instance's link to its Redis from outside, on a schedule, whoever holds the lock (give --target-redis-via, the addresses the instances dial for their Redis)",
		build:     newPartition,
	}
)

var pEveryCrash = Param{Name: "every", Doc: "least time between two injections", Default: "2×lease", kind: durationKind, def: leases(2)}

// registry is every fault, in the catalog's order: adding a fault is
// declaring its variable above and listing it here.
var registry = []Fault{PauseHolder, SlowHolder, PauseBeforeRelease, Expire, CrashHolder, CrashAfterSetNX, ClockSkew, ServerPause, Restart, LoseQuorum, Latency, Partition, CutLink, PauseInstance, CrashInstance, DeleteLock, Failover}

// All returns every fault, in the catalog's order. The slice is a copy:
// changing it changes no registry.
func All() []Fault { return slices.Clone(registry) }

// holderFire is what a holder fault does when it fires at a probe.
type holderFire func(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site, v values) error

// holderPlan fires at scheduled armings, on the next holder to pass its
// point.
type holderPlan struct {
	v    values
	trig trigger
	fire holderFire
}

// holder builds the plan of a fault that strikes a client at a probe
// point: the at parameter where there is one, else the fault's own point.
func holder(point locks.Point, fire holderFire) func(values, uint64) (plan, error) {
	return func(v values, seed uint64) (plan, error) {
		node, err := v.node("node")
		if err != nil {
			return nil, err
		}
		p := &holderPlan{v: v, fire: fire}
		p.trig.point = point
		if point == "" {
			p.trig.point = v.point("at")
		}
		p.trig.node = node
		n := v.count("count")
		if n == allCount {
			p.trig.all, n = true, 1
		}
		p.trig.at = schedule(seed, n, v.duration("after"), v.duration("every"))
		if p.trig.all {
			// Every fault that takes count=all takes within.
			if w := v.duration("within"); w > 0 {
				p.trig.until = p.trig.at[0] + int64(w)
			}
		}
		return p, nil
	}
}

func (p *holderPlan) probe(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site) error {
	if !p.trig.claim(c.Now(), at) {
		return nil
	}
	return p.fire(ctx, in, c, at, p.v)
}

func (p *holderPlan) run(context.Context, *Injector, *workload.Controls) {}
